"""Base model for plugin args: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class PluginArgs(BaseModel):
    """Base of every ``<Name>Args`` model: keys are camelCase in YAML (``headsProbability``),
    snake_case in Python; an unknown key is an error naming it."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)
