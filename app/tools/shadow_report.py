"""``shadow-report``: the shadow scheduler's agreement with the scheduler it follows, from its
records: ``--url`` reads a running ``shadow``'s ``GET /shadow`` (the records it keeps, the last
``--max-records``), ``--file`` the JSON lines ``shadow --record FILE`` wrote (every record since
that file was started). Prints the agreement rate and each disagreeing pod with both nodes, their
``TotalScore`` and the plugin that made the difference (:func:`app.shadow.report.report`), as text
or ``--json``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from app.shadow.record import ShadowRecord
from app.shadow.report import render, report


def shadow_report(args: argparse.Namespace) -> int:
    """``shadow-report (--url URL | --file FILE) [--json]``. Exit 0 with the report, 1 when the
    records cannot be read (unreachable service, unreadable or malformed file)."""
    try:
        docs = _from_url(args.url) if args.url else _from_file(args.file)
        records = [ShadowRecord.from_json(d) for d in docs]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    body = report(records)
    if args.json:
        print(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    else:
        print(render(body), end="")
    return 0


def _from_url(url: str) -> list[Any]:
    import httpx

    target = f"{url.rstrip('/')}/shadow"
    try:
        with httpx.Client(timeout=10) as client:
            response = client.get(target)
    except (httpx.HTTPError, OSError) as exc:
        raise ValueError(f"cannot reach {url}: {exc}") from None
    if response.status_code != 200:
        raise ValueError(f"{target}: HTTP {response.status_code}: {response.text[:300]}")
    try:
        records = response.json()["records"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{target}: not a shadow scheduler's answer (no records)") from None
    if not isinstance(records, list):
        raise ValueError(f"{target}: records is not a list")
    return records


def _from_file(path: str) -> list[Any]:
    docs = []
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                docs.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
    return docs


__all__ = ["shadow_report"]
