"""Commands that drive or inspect the service: replay (offline, remote, capture), explain, schemas."""
