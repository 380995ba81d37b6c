"""kube-scheduler's volume plugins, ported from v1.36.3's pkg/scheduler/framework/plugins
(``volumebinding``, ``volumezone``, ``volumerestrictions``, ``nodevolumelimits``): VolumeBinding,
VolumeZone, VolumeRestrictions, NodeVolumeLimits, and v1.30's in-tree EBSLimits, GCEPDLimits and
AzureDiskLimits (gone from v1.36.3, out of the default profile), with the storage helpers they
share (:mod:`~app.plugins.volumes.helpers`) and CSI migration's translation
(:mod:`~app.plugins.volumes.translation`). They read the storage objects the cluster state watches
for them (``ClusterNeeds.volumes``)."""
