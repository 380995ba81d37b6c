"""A small external provisioner and PV controller for the test API server, in-process: what a
cluster runs beside the scheduler for ``WaitForFirstConsumer`` claims.

It watches the :class:`~tests.support.apiserver.FakeAPIServer`'s PersistentVolumeClaims and
PersistentVolumes (through the server's own watch) and, as kube-controller-manager's PV controller
(pkg/controller/volume/persistentvolume) and an external-provisioner would:

- a claim annotated ``volume.kubernetes.io/selected-node`` and not bound yet gets a new CSI
  PersistentVolume ``pvc-<claim uid>`` of its class, size and access modes, whose node affinity
  is the selected node's zone (``topology.kubernetes.io/zone``, else its hostname), bound to it;
- an unbound claim of an ``Immediate`` class (or of none) is bound to the smallest ``Available``
  volume of its class that holds it;
- a volume whose ``claimRef`` names an unbound claim (VolumeBinding's static binding) binds the
  claim to it.

Binding a claim sets ``spec.volumeName``, ``pv.kubernetes.io/bind-completed`` and
``pv.kubernetes.io/bound-by-controller`` and phase ``Bound``; the volume gets phase ``Bound``.
``delay`` seconds pass before each provisioning (0: at once). ``provisioned`` lists the claims
provisioned (``namespace/name``), ``bound_at`` when each claim was bound (``time.monotonic()``).
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from typing import Any

from tests.support.apiserver import FakeAPIServer, volume

Obj = dict[str, Any]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
ZONE = "topology.kubernetes.io/zone"


def _quantity(text: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


class Provisioner:
    """See the module doc. ``start()`` begins watching; ``stop()`` ends it."""

    def __init__(self, api: FakeAPIServer, delay: float = 0.0) -> None:
        self.api = api
        self.delay = delay
        self.provisioned: list[str] = []
        self.bound_at: dict[str, float] = {}
        self._events: queue.Queue[tuple[str, Obj] | None] = queue.Queue()
        self._watchers: list[Any] = []
        self._thread: threading.Thread | None = None

    def start(self) -> Provisioner:
        for kind in ("persistentvolumeclaims", "persistentvolumes"):
            watcher, _, _ = self.api.open_watch(kind, {})
            self._watchers.append(watcher)
            threading.Thread(target=self._forward, args=(kind, watcher), daemon=True).start()
        with self.api.lock:  # what exists already
            for obj in self.api.objects["persistentvolumeclaims"].values():
                self._events.put(("persistentvolumeclaims", copy.deepcopy(obj)))
        self._thread = threading.Thread(target=self._run, daemon=True, name="test-provisioner")
        self._thread.start()
        return self

    def stop(self) -> None:
        for watcher in self._watchers:
            watcher.events.put(None)
            self.api.close_watch(watcher)
        self._events.put(None)
        if self._thread is not None:
            self._thread.join(5)

    def _forward(self, kind: str, watcher: Any) -> None:
        while True:
            item = watcher.events.get()
            if item is None:
                return
            event, obj = item
            if event != "DELETED":
                self._events.put((kind, obj))

    def _run(self) -> None:
        while True:
            item = self._events.get()
            if item is None:
                return
            kind, obj = item
            try:
                if kind == "persistentvolumeclaims":
                    self._claim(obj)
                else:
                    self._volume(obj)
            except Exception:  # a race with the test's own writes: the next event retries
                continue

    # -- the controllers ------------------------------------------------------------------------------

    def _current_claim(self, namespace: str, name: str) -> Obj | None:
        with self.api.lock:
            found = self.api.objects["persistentvolumeclaims"].get(f"{namespace}/{name}")
            return copy.deepcopy(found) if found is not None else None

    def _claim(self, seen: Obj) -> None:
        meta = seen["metadata"]
        pvc = self._current_claim(meta["namespace"], meta["name"])
        if pvc is None or pvc["spec"].get("volumeName"):
            return
        class_name = pvc["spec"].get("storageClassName") or ""
        with self.api.lock:
            sc = copy.deepcopy(self.api.objects["storageclasses"].get(class_name))
        selected = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if selected:
            if self.delay:
                time.sleep(self.delay)
            self._provision(pvc, selected, sc)
        elif sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
            self._bind_available(pvc, class_name)

    def _provision(self, pvc: Obj, node_name: str, sc: Obj | None) -> None:
        with self.api.lock:
            node = self.api.objects["nodes"].get(node_name) or {"metadata": {"labels": {}}}
            labels = node["metadata"].get("labels") or {}
            meta = pvc["metadata"]
            name = f"pvc-{meta['uid']}"
            if name in self.api.objects["persistentvolumes"]:
                return
            pv = volume(
                name,
                size=pvc["spec"]["resources"]["requests"]["storage"],
                storage_class_name=pvc["spec"].get("storageClassName") or "",
                claim_ref=self._ref(pvc),
                zone=labels.get(ZONE, ""),
                csi_driver=(sc or {}).get("provisioner", "test.csi.example.com"),
                access_modes=tuple(pvc["spec"].get("accessModes") or ("ReadWriteOnce",)),
            )
            if not labels.get(ZONE):
                requirement = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}
                pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}
            pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": pv["spec"]["csi"]["driver"]}
            self.api.put("persistentvolumes", pv)
            self.provisioned.append(f"{meta['namespace']}/{meta['name']}")
            self._bind_claim(pvc, name)

    def _bind_available(self, pvc: Obj, class_name: str) -> None:
        wanted = _quantity(pvc["spec"]["resources"]["requests"]["storage"])
        with self.api.lock:
            candidates = [
                pv
                for pv in self.api.objects["persistentvolumes"].values()
                if pv["status"].get("phase") == "Available"
                and not pv["spec"].get("claimRef")
                and (pv["spec"].get("storageClassName") or "") == class_name
                and _quantity(pv["spec"]["capacity"]["storage"]) >= wanted
            ]
            if not candidates:
                return
            pv = copy.deepcopy(min(candidates, key=lambda v: _quantity(v["spec"]["capacity"]["storage"])))
            pv["spec"]["claimRef"] = self._ref(pvc)
            pv["status"]["phase"] = "Bound"
            self.api.put("persistentvolumes", pv)
            self._bind_claim(pvc, pv["metadata"]["name"])

    def _volume(self, seen: Obj) -> None:
        ref = seen["spec"].get("claimRef")
        if not ref:
            return
        pvc = self._current_claim(ref.get("namespace", ""), ref.get("name", ""))
        if pvc is None or pvc["spec"].get("volumeName"):
            return
        with self.api.lock:
            pv = copy.deepcopy(self.api.objects["persistentvolumes"].get(seen["metadata"]["name"]))
            if pv is None:
                return
            if pv["status"].get("phase") != "Bound":
                pv["status"]["phase"] = "Bound"
                self.api.put("persistentvolumes", pv)
            self._bind_claim(pvc, pv["metadata"]["name"])

    @staticmethod
    def _ref(pvc: Obj) -> Obj:
        meta = pvc["metadata"]
        return {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        }

    def _bind_claim(self, pvc: Obj, volume_name: str) -> None:
        with self.api.lock:
            meta = pvc["metadata"]
            current = self.api.objects["persistentvolumeclaims"].get(f"{meta['namespace']}/{meta['name']}")
            if current is None or current["spec"].get("volumeName"):
                return
            new = copy.deepcopy(current)
            new["spec"]["volumeName"] = volume_name
            annotations = new["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
            new["status"] = {"phase": "Bound"}
            self.api.put("persistentvolumeclaims", new)
            self.bound_at[f"{meta['namespace']}/{meta['name']}"] = time.monotonic()


__all__ = ["Provisioner"]
