"""Diagnostics: decision records, structured logs, pod events and traffic capture."""
