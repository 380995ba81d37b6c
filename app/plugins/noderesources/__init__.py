"""kube-scheduler's node-resource plugins, ported: ``NodeResourcesFit`` (Filter, and Score with
the ``LeastAllocated``/``MostAllocated``/``RequestedToCapacityRatio`` strategies) and
``NodeResourcesBalancedAllocation`` (pkg/scheduler/framework/plugins/noderesources)."""
