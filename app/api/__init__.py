"""The HTTP layer: FastAPI routes that decode, call the framework and encode.

``create_app`` is in :mod:`app.api.app`; this package imports nothing at import, so a command
that only builds the service (``validate``, ``render``, ``replay``) does not load FastAPI.
"""
