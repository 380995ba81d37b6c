"""The Kubernetes API's time formats, in UTC with a ``Z`` as the API server writes them.

- ``metav1.MicroTime`` (Lease ``renewTime``/``acquireTime``, Event ``eventTime``, an event series'
  ``lastObservedTime``): :func:`micro_time`, to the microsecond;
- ``metav1.Time`` (``creationTimestamp``, conditions' ``lastTransitionTime``): :func:`rfc3339_time`,
  to the second.

This module imports only the standard library.
"""

from __future__ import annotations

from datetime import UTC, datetime


def micro_time(seconds: float) -> str:
    """``metav1.MicroTime`` of ``seconds`` since the epoch: RFC 3339 with microseconds, UTC
    (``2024-01-02T03:04:05.678901Z``; k8s.io/apimachinery/pkg/apis/meta/v1/micro_time.go,
    ``RFC3339Micro``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_time(seconds: float) -> str:
    """``metav1.Time`` of ``seconds`` since the epoch: RFC 3339 to the second (the fraction
    dropped), UTC (``2024-01-02T03:04:05Z``; k8s.io/apimachinery/pkg/apis/meta/v1/time.go,
    ``MarshalJSON`` with ``time.RFC3339``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["micro_time", "rfc3339_time"]
