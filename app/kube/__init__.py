"""The Kubernetes API: client loading, list/watch transport and the binder.

The only package that imports the official ``kubernetes`` client; import its submodules
(:mod:`app.kube.client`, :mod:`app.kube.binder`) where needed, so the request path and a
profile without cluster state never load it.
"""
