"""Resource lists (dicts of milli-units) and the pod request formula Kubernetes uses."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubefacts import labels as L

# Resources a pod-level `resources.requests` may set (KEP-2837); the rest still come from containers.
POD_LEVEL_RESOURCES = ("cpu", "memory")


def add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def total(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum of these resource lists, added in place (a node's hundreds of pods, every pass)."""
    out: dict[str, int] = {}
    for resources in lists:
        for k, v in resources.items():
            out[k] = out.get(k, 0) + v
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """a - b over a's keys, like resources.Subtract."""
    return {k: v - b.get(k, 0) for k, v in a.items()}


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, 0):
            out[k] = v
    return out


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """resources.Fits: every request fits and no available quantity is negative."""
    if any(v < 0 for v in available.values()):
        return False
    return all(v <= available.get(k, 0) for k, v in requests.items())


def pod_requests(containers: Iterable[Mapping[str, int]],
                 init_containers: Iterable[tuple[Mapping[str, int], bool]] = (),
                 overhead: Mapping[str, int] | None = None,
                 pod_level: Mapping[str, int] | None = None) -> dict[str, int]:
    """Effective requests as the kube-scheduler computes them (component-helpers PodRequests).

    containers: iterable of request dicts; init_containers: iterable of (request dict, is_sidecar).
    The result is the larger of (containers + sidecars) and the largest init container (plus the
    sidecars started before it), plus pod overhead, plus Karpenter's implicit `pods: 1`.
    """
    total: dict[str, int] = {}
    for requests in containers:
        total = add(total, requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, is_sidecar in init_containers:
        if is_sidecar:
            total = add(total, requests)
            sidecars = add(sidecars, requests)
            effective = sidecars
        else:
            effective = add(requests, sidecars)
        init_peak = maximum(init_peak, effective)
    total = maximum(total, init_peak)
    if pod_level:
        for name in POD_LEVEL_RESOURCES:
            if name in pod_level:
                total[name] = pod_level[name]
    if overhead:
        total = add(total, overhead)
    total = {k: v for k, v in total.items() if v}
    total[L.PODS] = 1000
    return total
