"""NodePool presets: the patterns users copy from the Karpenter v1 docs, as partial pool specs.

A preset is merged *under* the pool's own keys: dictionaries merge key by key, `requirements`
merge by requirement key, and any other list the pool sets replaces the preset's.
"""

from __future__ import annotations

import copy
from typing import Any

_ARCH = "kubernetes.io/arch"
_CAPACITY = "karpenter.sh/capacity-type"
_CATEGORY = "karpenter.k8s.aws/instance-category"
_GENERATION = "karpenter.k8s.aws/instance-generation"
_ZONE = "topology.kubernetes.io/zone"
_CPU = "karpenter.k8s.aws/instance-cpu"
# Size caps, chosen by simulating Karpenter on seven realistic workloads against an LP lower bound
# (BENCHMARKS.md, "Presets and tune"): without one, Karpenter packs a batch of pods into one
# NodeClaim until only the largest types fit. A pool opts out by writing its own requirement on
# karpenter.k8s.aws/instance-cpu (requirements merge by key), e.g. `operator: Exists`.
GENERAL_CAP = "33"  # at most 32 vCPU
BATCH_CAP = "65"  # at most 64 vCPU: CPU-bound jobs pack well on the 48/64-vCPU sizes


def _req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


PRESETS: dict[str, dict[str, Any]] = {
    # The getting-started "default" NodePool: current-generation general purpose on-demand x86.
    "general": {
        "requirements": [
            _req(_ARCH, "In", "amd64"),
            _req("kubernetes.io/os", "In", "linux"),
            _req(_CAPACITY, "In", "on-demand"),
            _req(_CATEGORY, "In", "c", "m", "r"),
            _req(_GENERATION, "Gt", "2"),
            _req(_CPU, "Lt", GENERAL_CAP),
        ],
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
        "expireAfter": "720h",
    },
    # Spot first with on-demand fallback: Karpenter prefers spot when both are allowed. Three
    # categories over every current generation leave many instance types, which spot needs;
    # a pool can enforce it with minValues on an In requirement (e.g. instance-family).
    "spot": {
        "requirements": [
            _req(_ARCH, "In", "amd64"),
            _req(_CAPACITY, "In", "spot", "on-demand"),
            _req(_CATEGORY, "In", "c", "m", "r"),
            _req(_GENERATION, "Gt", "2"),
            _req(_CPU, "Lt", GENERAL_CAP),
        ],
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
        "expireAfter": "168h",
    },
    # NVIDIA GPU nodes, tainted so that only pods asking for GPUs land there; removing a node
    # interrupts training, so only empty nodes are consolidated. No size cap: how many GPUs one
    # pod needs is the team's call (the size-cap advisory reminds it).
    "gpu": {
        "requirements": [
            _req(_CAPACITY, "In", "on-demand"),
            _req(_CATEGORY, "In", "g", "p"),
            _req("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"),
        ],
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        "expireAfter": "720h",
    },
    # Batch: cheap capacity, nodes removed only once empty so running jobs finish. amd64 unless
    # combined with `graviton` (later presets win a key), so amd64-only images never land on arm64.
    "batch": {
        "requirements": [
            _req(_ARCH, "In", "amd64"),
            _req(_CAPACITY, "In", "spot", "on-demand"),
            _req(_CATEGORY, "In", "c", "m", "r"),
            _req(_GENERATION, "Gt", "4"),
            _req(_CPU, "Lt", BATCH_CAP),
        ],
        "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"},
        "expireAfter": "720h",
    },
    # Graviton (arm64): better price-performance for workloads with arm64 images.
    "graviton": {
        "requirements": [
            _req(_ARCH, "In", "arm64"),
            _req(_CATEGORY, "In", "c", "m", "r"),
            _req(_GENERATION, "Gt", "5"),
        ],
    },
    # Spread over the cluster's zones; the zones are filled in from the stack's region.
    "multi-zone": {"requirements": [_req(_ZONE, "In")]},
}


def _merge_requirements(base: list[dict], override: list[dict]) -> list[dict]:
    keys = {r.get("key") for r in override if isinstance(r, dict)}
    return [r for r in base if r.get("key") not in keys] + list(override)


def deep_merge(base: Any, override: Any) -> Any:
    """`override` on top of `base`: dicts merge, `requirements` merge by key, other values replace."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if key == "requirements" and isinstance(value, list) and isinstance(base.get(key), list):
                merged[key] = _merge_requirements(base[key], value)
            elif key in base:
                merged[key] = deep_merge(base[key], value)
            else:
                merged[key] = value
        return merged
    return copy.deepcopy(override)


def preset_spec(name: str, zones: list[str]) -> dict[str, Any]:
    spec = copy.deepcopy(PRESETS[name])
    for requirement in spec.get("requirements", []):
        if requirement["key"] == _ZONE and requirement["operator"] == "In" and not requirement["values"]:
            requirement["values"] = list(zones)
    return spec


def expand_presets(pool: dict[str, Any], zones: list[str]) -> dict[str, Any]:
    """A raw pool dict with its presets merged underneath; unknown preset names are left for
    validation to reject with the list of valid ones."""
    names = pool.get("preset")
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list):
        return pool
    expanded: dict[str, Any] = {}
    # `graviton` names an architecture on purpose: it wins over batch's amd64 in either order.
    for name in sorted(names, key=lambda n: n == "graviton"):
        if isinstance(name, str) and name in PRESETS:
            expanded = deep_merge(expanded, preset_spec(name, zones))
    return deep_merge(expanded, pool)
