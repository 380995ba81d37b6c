"""Kubernetes scheduler extender service: kube-scheduler's extender webhook with pluggable policies."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scheduler-extender")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"
