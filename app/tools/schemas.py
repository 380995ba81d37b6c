"""``schemas``: the JSON Schemas of the wire types and of the configuration."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.config import Configuration


def write_schemas(out: Path) -> list[Path]:
    """Write one JSON Schema file per wire type and one for the configuration; returns the paths."""
    from app.extender import models

    out.mkdir(parents=True, exist_ok=True)
    written = []
    wire: Sequence[Any] = (
        models.ExtenderArgs,
        models.ExtenderFilterResult,
        models.HostPriorityList,
        models.ExtenderPreemptionArgs,
        models.ExtenderPreemptionResult,
        models.ExtenderBindingArgs,
        models.ExtenderBindingResult,
    )
    for model in wire:
        path = out / f"{model.__name__}.json"
        path.write_text(json.dumps(model.model_json_schema(by_alias=True, mode="serialization"), indent=2) + "\n")
        written.append(path)
    path = out / "ExtenderConfiguration.json"
    path.write_text(json.dumps(Configuration.model_json_schema(by_alias=True), indent=2) + "\n")
    written.append(path)
    return written


def schemas(args: argparse.Namespace) -> int:
    """``schemas --out DIR``: :func:`write_schemas`, each path on standard output."""
    for path in write_schemas(Path(args.out)):
        print(path)
    return 0


__all__ = ["schemas", "write_schemas"]
