"""kube-scheduler's volume plugins, ported from v1.30's pkg/scheduler/framework/plugins
(``volumebinding``, ``volumezone``, ``volumerestrictions``, ``nodevolumelimits``): VolumeBinding,
VolumeZone, VolumeRestrictions, NodeVolumeLimits and the in-tree EBSLimits, GCEPDLimits and
AzureDiskLimits, with the storage helpers they share (:mod:`~app.plugins.volumes.helpers`) and
CSI migration's translation (:mod:`~app.plugins.volumes.translation`). They read the storage
objects the cluster state watches for them (``ClusterNeeds.volumes``)."""
