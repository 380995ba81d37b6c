"""Commands that drive or inspect the service: replay (offline, remote, capture), validate, explain,
schemas, reference, and the deployment commands (deploy: render, certs, check-scheduler-config)."""
