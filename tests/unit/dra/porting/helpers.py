"""Python stand-ins of the helpers upstream's allocator test table builds its objects with
(``structured/internal/allocatortesting/allocator_testing.go``, v1.36.3), producing the
``resource.k8s.io/v1`` JSON the allocator reads. Wrapper types keep the ``with...`` methods."""

from __future__ import annotations

import copy
import json
from typing import Any

NODE_SELECTION_ALL = "nodeSelectionAll"
NODE_SELECTION_PER_DEVICE = "nodeSelectionPerDevice"
FROM_COUNTERS = "fromCounters"
CAPACITY0 = "capacity-0"


def quantity_of(value: Any) -> str:
    return str(value)


class W(dict):  # a wrapper: dict with .obj()
    def obj(self) -> Any:
        return self.get("__obj__", self)


def node(name: str, region: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def klass(name: str, driver: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def class_with_allow_multiple_allocations(name: str, driver: str, multi: bool) -> dict[str, Any]:
    c = klass(name, driver)
    c["spec"]["selectors"][0]["cel"]["expression"] = (
        f'device.driver == "{driver}" && device.allowMultipleAllocations == {"true" if multi else "false"}'
    )
    return c


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def class_with_config(name: str, driver: str, attribute: str) -> dict[str, Any]:
    c = klass(name, driver)
    c["spec"]["config"] = [device_configuration(driver, attribute)]
    return c


def claim_with_requests(name: str, constraints: Any, *requests: Any) -> Claim:
    devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if constraints:
        devices["constraints"] = list(constraints)
    return Claim({"metadata": {"name": name}, "spec": {"devices": devices}})


def request(name: str, klass_: str, count: int, *selectors: Any) -> Req:
    exactly: dict[str, Any] = {"count": count, "allocationMode": "ExactCount", "deviceClassName": klass_}
    if selectors:
        exactly["selectors"] = list(selectors)
    return Req({"name": name, "exactly": exactly})


def device_request(name: str, klass_: str, count: int) -> Req:
    return request(name, klass_, count)


def all_device_request(name: str, klass_: str) -> Req:
    return Req({"name": name, "exactly": {"allocationMode": "All", "deviceClassName": klass_}})


def sub_request(name: str, klass_: str, count: int, *fields: Any) -> SubReq:
    sub: dict[str, Any] = {"name": name, "count": count, "allocationMode": "ExactCount", "deviceClassName": klass_}
    for f in fields:
        if "cel" in f:
            sub.setdefault("selectors", []).append(f)
        else:
            sub.setdefault("tolerations", []).append(f)
    return SubReq(sub)


def capacity_requests(q: Any) -> dict[str, Any]:
    return {"requests": {CAPACITY0: quantity_of(q)} if q is not None else {}}


class Req(W):
    def withCapacityRequest(self, q: Any) -> Req:  # noqa: N802
        out = Req(copy.deepcopy(dict(self)))
        out["exactly"]["capacity"] = capacity_requests(q)
        return out

    def withSelectors(self, *selectors: Any) -> Req:  # noqa: N802
        out = Req(copy.deepcopy(dict(self)))
        out["exactly"]["selectors"] = list(selectors)
        return out


class SubReq(W):
    def withAllocationMode(self, mode: str) -> SubReq:  # noqa: N802
        out = SubReq(copy.deepcopy(dict(self)))
        out["allocationMode"] = mode
        return out

    def withCapacityRequest(self, q: Any) -> SubReq:  # noqa: N802
        out = SubReq(copy.deepcopy(dict(self)))
        out["capacity"] = capacity_requests(q)
        return out


def request_with_prioritized_list(name: str, *subs: Any) -> Req:
    return Req({"name": name, "firstAvailable": [dict(s) for s in subs]})


def claim_with_request(name: str, req: str, klass_: str, *constraints: Any) -> Claim:
    return claim_with_requests(name, list(constraints), request(req, klass_, 1))


def claim(name: str) -> Claim:
    return Claim({"metadata": {"name": name}, "spec": {"devices": {}}})


class Claim(W):
    def _copy(self) -> Claim:
        return Claim(copy.deepcopy(dict(self)))

    def withTolerations(self, *tolerations: Any) -> Claim:  # noqa: N802
        out = self._copy()
        for r in out["spec"]["devices"].get("requests", []):
            r["exactly"].setdefault("tolerations", []).extend(tolerations)
        return out

    def withRequests(self, *requests: Any) -> Claim:  # noqa: N802
        out = self._copy()
        out["spec"]["devices"]["requests"] = [dict(r) for r in requests]
        return out

    def withConstraints(self, *constraints: Any) -> Claim:  # noqa: N802
        out = self._copy()
        out["spec"]["devices"]["constraints"] = list(constraints)
        return out

    def withConfigs(self, configs: Any) -> Claim:  # noqa: N802
        out = self._copy()
        out["spec"]["devices"]["config"] = list(configs)
        return out


def claim_with_device_config(name: str, req: str, klass_: str, driver: str, attribute: str) -> Claim:
    c = claim_with_request(name, req, klass_)
    c["spec"]["devices"]["config"] = [device_configuration(driver, attribute)]
    return c


def device_claim_config(requests: Any, config: dict[str, Any]) -> dict[str, Any]:
    out = dict(config)
    if requests:
        out = {"requests": list(requests), **config}
    return out


class Dev(W):
    def _copy(self) -> Dev:
        out = Dev(copy.deepcopy(dict(self)))
        out.pop("__fromCounters__", None)
        return out

    def withTaints(self, *taints: Any) -> Dev:  # noqa: N802
        out = self._copy()
        out.setdefault("taints", []).extend(taints)
        return out

    def withDeviceCounterConsumption(self, *consumption: Any) -> Dev:  # noqa: N802
        from_counters = self.get("__fromCounters__")
        out = self._copy()
        out.setdefault("consumesCounters", []).extend(consumption)
        if from_counters:
            out["capacity"] = {
                name: {"value": c["value"]} for dcc in out["consumesCounters"] for name, c in dcc["counters"].items()
            }
        return out

    def withNodeSelection(self, selection: Any) -> Dev:  # noqa: N802
        out = self._copy()
        if isinstance(selection, dict):
            out["nodeSelector"] = selection
        elif selection == NODE_SELECTION_ALL:
            out["allNodes"] = True
        else:
            out["nodeName"] = selection
        return out

    def withBindingConditions(self, conditions: Any, failure: Any) -> Dev:  # noqa: N802
        out = self._copy()
        if conditions is not None:
            out["bindingConditions"] = conditions
        if failure is not None:
            out["bindingFailureConditions"] = failure
        return out

    def withBindsToNode(self, binds: bool) -> Dev:  # noqa: N802
        out = self._copy()
        out["bindsToNode"] = binds
        return out

    def withAllowMultipleAllocations(self) -> Dev:  # noqa: N802
        out = self._copy()
        out["allowMultipleAllocations"] = True
        return out

    def withCapacityRequestPolicyRange(self, capacity: dict[str, Any]) -> Dev:  # noqa: N802
        out = self._copy()
        caps = out.setdefault("capacity", {})
        for name, q in capacity.items():
            caps[name] = {
                "value": quantity_of(q),
                "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
            }
        return out

    def withCapacityRequestPolicyValidValues(self, default: Any, capacity: dict[str, Any], extra: Any) -> Dev:  # noqa: N802
        out = self._copy()
        caps = out.setdefault("capacity", {})
        for name, q in capacity.items():
            caps[name] = {
                "value": quantity_of(q),
                "requestPolicy": {
                    "default": quantity_of(default),
                    "validValues": [quantity_of(default)] + [quantity_of(v) for v in extra or []],
                },
            }
        return out


def device(name: str, capacity: Any, attributes: Any) -> Dev:
    d = Dev({"name": name})
    if attributes:
        d["attributes"] = attributes
    if isinstance(capacity, dict):
        d["capacity"] = {k: {"value": quantity_of(v)} for k, v in capacity.items()}
    elif capacity == FROM_COUNTERS:
        d["__fromCounters__"] = True
    return d


def device_counter_consumption(counter_set: str, counters: dict[str, Any]) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": quantity_of(v)} for k, v in (counters or {}).items()}}


def slice_(name: str, selection: Any, pool: Any, driver: str) -> dict[str, Any]:
    if isinstance(pool, str):
        pool = {"name": pool, "resourceSliceCount": 1, "generation": 1}
    spec: dict[str, Any] = {"driver": driver, "pool": pool}
    if isinstance(selection, dict):
        spec["nodeSelector"] = selection
    elif selection == NODE_SELECTION_ALL:
        spec["allNodes"] = True
    elif selection == NODE_SELECTION_PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = selection
    return {"metadata": {"name": name}, "spec": spec}


def clean_device(d: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(d).items() if not k.startswith("__")}


def slice_with_devices(name: str, selection: Any, pool: Any, driver: str, *devices: Any) -> W:
    s = slice_(name, selection, pool, driver)
    if devices:
        s["spec"]["devices"] = [clean_device(d) for d in devices]
    return W(s)


def slice_with_counter_sets(name: str, selection: Any, pool: Any, driver: str, *sets: Any) -> W:
    s = slice_(name, selection, pool, driver)
    s["spec"]["sharedCounters"] = list(sets)
    return W(s)


def slice_with_multiple_devices(name: str, selection: Any, pool: Any, driver: str, count: int) -> W:
    return slice_with_devices(name, selection, pool, driver, *[device(f"device-{i}", None, None) for i in range(count)])


def counter_set(name: str, counters: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": quantity_of(v)} for k, v in (counters or {}).items()}}


def resource_pool(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": 1}


def device_allocation_result(
    req: str, driver: str, pool: str, dev: str, admin: bool, *tolerations: Any
) -> dict[str, Any]:
    r: dict[str, Any] = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if admin:
        r["adminAccess"] = True
    if tolerations:
        r["tolerations"] = list(tolerations)
    return r


class ResultW(W):
    def withConsumedCapacity(self, share_id: Any, consumed: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        out = dict(self)
        if share_id is not None:
            out["shareID"] = share_id
        if consumed:
            out["consumedCapacity"] = {k: quantity_of(v) for k, v in consumed.items()}
        return out


def device_request_allocation_result(req: str, driver: str, pool: str, dev: str) -> ResultW:
    return ResultW({"request": req, "driver": driver, "pool": pool, "device": dev})


def device_request_allocation_result_with_binding_conditions(
    req: str, driver: str, pool: str, dev: str, conditions: Any, failure: Any, *tolerations: Any
) -> dict[str, Any]:
    r: dict[str, Any] = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if conditions:
        r["bindingConditions"] = conditions
    if failure:
        r["bindingFailureConditions"] = failure
    if tolerations:
        r["tolerations"] = list(tolerations)
    return r


def multiple_device_allocation_results(req: str, driver: str, pool: str, count: int, start: int) -> list[Any]:
    return [device_allocation_result(req, driver, pool, f"device-{i}", False) for i in range(start, start + count)]


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local_node_selector(name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}


def allocation_result(selector: Any, *results: Any) -> dict[str, Any]:
    """A matcher upstream: results in any order, no config."""
    out: dict[str, Any] = {"devices": {"results": [dict(r) for r in results]}, "unorderedResults": True}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def allocation_result_with_config(
    selector: Any, driver: str, source: str, attribute: str, *results: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "devices": {
            "results": [dict(r) for r in results],
            "config": [{"source": source, **device_configuration(driver, attribute)}],
        }
    }
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def allocation_result_with_configs(selector: Any, results: Any, configs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": {"results": [dict(r) for r in results]}}
    if configs:
        out["devices"]["config"] = list(configs)
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def raw_extension(obj: dict[str, Any]) -> Any:
    raw = obj.get("raw")
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


def match_error(inner: Any) -> dict[str, Any]:
    return {"errorContains": inner}
