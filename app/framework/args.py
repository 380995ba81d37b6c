"""Base model for plugin args: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class PluginArgs(BaseModel):
    """Base of every ``<Name>Args`` model: keys are camelCase in YAML (``headsProbability``),
    snake_case in Python; an unknown key is an error naming it."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class ResourceSpec(PluginArgs):
    """kube-scheduler's ``config.ResourceSpec``: a resource name and its weight (> 0). Plugins
    that bound the weight further (the resource scorers: 1..``MaxNodeScore``) check it in their
    own args."""

    name: str = Field(min_length=1)
    weight: int = Field(default=1, gt=0)


def bounded_weights(resources: list[ResourceSpec], highest: int) -> list[ResourceSpec]:
    """``resources``, or ``ValueError`` for a weight above ``highest`` (upstream's
    ``validateResources``) or a repeated name."""
    names = [r.name for r in resources]
    if len(set(names)) != len(names):
        raise ValueError("resource names must not repeat")
    for r in resources:
        if r.weight > highest:
            raise ValueError(f"resource {r.name}: weight {r.weight}: Input should be less than or equal to {highest}")
    return resources
