"""kube-scheduler's DynamicResources plugin, ported from v1.36.3's
``pkg/scheduler/framework/plugins/dynamicresources/``, with the structured allocator it calls
(:mod:`~app.plugins.dynamicresources.structured`, upstream's
``staging/src/k8s.io/dynamic-resource-allocation/structured/``) and the DRA CEL environment
(``dynamic-resource-allocation/cel/``). Objects are the ``resource.k8s.io/v1`` JSON the API server
serves (ResourceClaim, ResourceSlice, DeviceClass), as dicts."""
