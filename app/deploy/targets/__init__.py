"""The install targets of ``render --target``, one module each, over the shared builders of
:mod:`app.deploy.objects`: :data:`TARGETS` maps a target's name to its module, which has
``NAME``, ``FILES`` (the paths it may write; a name ending in ``/`` is a directory) and
``files(config, registry, options, source) -> {relative path: text}``."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from app.config import Configuration
from app.deploy.objects import RenderOptions
from app.deploy.targets import kubeadm, second_scheduler, shadow, standalone, static_pod
from app.framework.registry import Registry

#: ``files(config, registry, options, source)``: a target's ``{relative path: text}``.
Files = Callable[[Configuration, Registry, RenderOptions, str], dict[str, str]]

#: The install targets in ``render``'s order (``--target all``: every one).
MODULES: tuple[ModuleType, ...] = (kubeadm, static_pod, second_scheduler, standalone, shadow)
TARGETS: dict[str, ModuleType] = {m.NAME: m for m in MODULES}

__all__ = ["MODULES", "TARGETS", "Files"]
