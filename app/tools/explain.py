"""``explain NAMESPACE/NAME``: a client of the running service's ``/explain`` (why a pod was, or
was not, placed)."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

import orjson


def explain(args: argparse.Namespace) -> int:
    """``explain NAMESPACE/NAME``: GET ``/explain/...`` from a running service and print it."""
    import httpx

    from app.api.explain import render

    namespace, slash, name = args.pod.partition("/")
    if not slash or not namespace or not name or "/" in name:
        print(f"error: expected NAMESPACE/NAME, got {args.pod!r}", file=sys.stderr)
        return 2
    verify: Any = True
    if args.cacert or args.cert:
        import ssl

        verify = ssl.create_default_context(cafile=args.cacert)
        if args.cert:
            verify.load_cert_chain(args.cert, args.key)
    url = f"{args.url.rstrip('/')}/explain/{quote(namespace, safe='')}/{quote(name, safe='')}"
    try:
        with httpx.Client(timeout=10, verify=verify) as client:
            response = client.get(url)
    except (httpx.HTTPError, OSError) as exc:
        print(f"error: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text[:500]
        print(f"error: HTTP {response.status_code}: {detail}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps(response.json(), option=orjson.OPT_INDENT_2).decode())
    else:
        from app.shadow.report import render_explained

        print(render(response.json(), top=args.top) + render_explained(response.json()), end="")
    return 0


__all__ = ["explain"]
