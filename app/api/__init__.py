"""The HTTP layer: FastAPI routes that decode, call the framework and encode."""

from app.api.app import create_app

__all__ = ["create_app"]
