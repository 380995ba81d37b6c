"""ImageLocality: favour nodes that already have the pod's images.

Ports kube-scheduler v1.30's plugin (pkg/scheduler/framework/plugins/imagelocality/image_locality.go):

- every image of the pod's init containers and containers, normalized
  (:func:`normalized_image_name`: ``:latest`` appended when the name has no tag), that is among the
  node's ``status.images`` names adds ``sizeBytes * NumNodes / TotalNodes`` (``scaledImageScore``,
  truncated to an integer; ``NumNodes``: how many nodes of the cluster have that image name,
  ``TotalNodes``: how many nodes there are), so that images already spread over the cluster weigh
  more than images on few nodes (the "node heating problem");
- the sum, clamped to ``[23 MiB, 1000 MiB * number of containers]`` (init containers included), is
  mapped linearly onto 0..100 (``calculatePriority``, integer division).

Upstream reads the cluster's nodes from its snapshot in Score. Here PreScore counts them once per
cycle: from ``state.snapshot`` (every node of the cluster state) when there is one, else from the
nodes being scored. PreScore never returns ``Skip`` (a skipped plugin would drop out of the weighted
mean instead of scoring 0). A node whose image the snapshot does not count (a node the cluster
state does not know) counts that image on one node, itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.framework import signers
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import go_div

NAME = "ImageLocality"
_PRE_SCORE = f"{NAME}/images"

#: bytes in a MiB (upstream's ``mb``)
MB = 1024 * 1024
#: below this sum of scaled image sizes a node scores 0 (``minThreshold``), bytes
MIN_THRESHOLD = 23 * MB
#: a container's share of the sum at which a node scores 100 (``maxContainerThreshold``), bytes
MAX_CONTAINER_THRESHOLD = 1000 * MB
#: upstream's ``parsers.DefaultImageTag``
DEFAULT_IMAGE_TAG = "latest"


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: ``name`` with ``:latest`` appended when it has no tag, that is
    when its last ``:`` is not after its last ``/`` (``gcr.io:5000/root`` -> ``gcr.io:5000/root:latest``;
    ``root:tag`` and ``root@sha256:...`` are kept)."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{DEFAULT_IMAGE_TAG}"
    return name


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """``scaledImageScore``: ``size`` (bytes) times the spread ``num_nodes / total_num_nodes``,
    in float64 and truncated toward zero as Go's ``int64(float64(size) * spread)``."""
    spread = num_nodes / total_num_nodes
    return int(float(size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: ``sum_scores`` (bytes) clamped to
    ``[MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * num_containers]`` and mapped onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    numerator = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    denominator = max_threshold - MIN_THRESHOLD
    if numerator == 0:
        return 0
    return go_div(numerator, denominator)


@dataclass(frozen=True, slots=True)
class ImageState:
    """What PreScore writes: the pod's normalized image names (init containers first, duplicates
    kept as upstream sums per container), the number of containers (init included), the number
    of nodes of the cluster, and how many of them have each name."""

    images: tuple[str, ...]
    num_containers: int
    total_num_nodes: int
    num_nodes: Mapping[str, int]


def pod_images(pod: PodInfo) -> tuple[tuple[str, ...], int]:
    """The pod's normalized images (init containers, then containers) and its number of
    containers, init containers included (``len(InitContainers) + len(Containers)``)."""
    if pod.pod is not None:
        spec = pod.spec
        containers = (*(spec.init_containers or ()), *(spec.containers or ()))
        return tuple(normalized_image_name(c.image or "") for c in containers), len(containers)
    return tuple(normalized_image_name(i) for i in pod.images), len(pod.images)


def image_state(pod: PodInfo, cluster_nodes: Sequence[NodeInfo]) -> ImageState:
    """The :class:`ImageState` of ``pod`` over ``cluster_nodes`` (every node of the cluster)."""
    images, num_containers = pod_images(pod)
    wanted = set(images)
    num_nodes = dict.fromkeys(wanted, 0)
    for node in cluster_nodes:
        on_node = node.images
        if not on_node:
            continue
        for name in wanted:
            if name in on_node:
                num_nodes[name] += 1
    return ImageState(images, num_containers, len(cluster_nodes), num_nodes)


def sum_image_scores(state: ImageState, node: NodeInfo) -> int:
    """``sumImageScores``: the scaled sizes (bytes) of the pod's images present on ``node``."""
    on_node = node.images
    if not on_node:
        return 0
    total = max(state.total_num_nodes, 1)
    total_score = 0
    for name in state.images:
        size = on_node.get(name)
        if size is not None:
            total_score += scaled_image_score(size, max(state.num_nodes.get(name, 0), 1), total)
    return total_score


class ImageLocality:
    """PreScore + Score (see the module doc). Takes no args; stateless."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (image_locality.go, v1.36.3): the distinct normalized image names, sorted."""
        return [(signers.IMAGE_NAMES, sorted({normalized_image_name(i) for i in pod.images}))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Counts, over the cluster's nodes (``state.snapshot``, else ``nodes``), how many have
        each of the pod's images; always ``SUCCESS``."""
        lister = state.snapshot
        cluster_nodes = lister.list() if lister is not None else nodes
        state.write(_PRE_SCORE, image_state(pod, cluster_nodes))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """0..100 for ``node``; ``Error`` when PreScore has not run."""
        images: ImageState | None = state.get(_PRE_SCORE)
        if images is None:
            return 0, Status.error(f'reading "{_PRE_SCORE}" from cycleState: not found')
        return calculate_priority(sum_image_scores(images, node), images.num_containers), SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=ImageLocality,
    args=None,
    # the nodes' status.images and the pods' images: the cluster state keeps them only when asked
    needs=lambda args, http_timeout: ClusterNeeds(images=True),
    summary="score: kube-scheduler's ImageLocality (nodes that already have the pod's images, by size and spread)",
)
