"""Deployment: render manifests from the service configuration (:mod:`app.deploy.render`) and
check a user's ``KubeSchedulerConfiguration`` against a running service (:mod:`app.deploy.check`,
:mod:`app.deploy.kubesched`)."""
