"""The Kubernetes API: client loading, the list/watch transport, its errors and the API time
formats.

The only package that imports the official ``kubernetes`` client; import its submodules
(:mod:`app.kube.client`) where needed, so the request path and a profile without cluster state
never load it.
"""
