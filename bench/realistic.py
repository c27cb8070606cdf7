"""Realistic workloads for choosing presets and measuring `tune` (deterministic object dicts).

Each workload is a set of Deployments plus the NodePools that would serve them, in one of two
modes: "open" (only the capacity type and, where images need it, the architecture: what a team
writes when it does not think about size) or the platform's presets (`components.config.presets`,
imported only here, so the provisioner package itself does not depend on the platform). A cap can
be forced on the preset pools to compare caps.
"""
from __future__ import annotations

import random

from .workloads import deployment, nodeclass, nodepool

TEAM = "karpenter-platform.io/team"
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
BATCH_TOLERATION = [{"key": "workload-type", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]


def _pool(team: str, presets: list, mode: str, cap: int | None, open_requirements: list, open_taints=None):
    name = f"{team}-pool"
    if mode == "open":
        return nodepool(name, open_requirements, {TEAM: team}, taints=open_taints)
    from components.config.presets import expand_presets  # the platform's presets, as rendered
    spec = expand_presets({"preset": presets}, ZONES)
    requirements = [(r["key"], r["operator"], r.get("values") or []) for r in spec.get("requirements", [])]
    if cap is not None:
        requirements = [r for r in requirements if r[0] != "karpenter.k8s.aws/instance-cpu"]
        if cap:
            requirements.append(("karpenter.k8s.aws/instance-cpu", "Lt", [str(cap + 1)]))
    return nodepool(name, requirements, {TEAM: team}, taints=spec.get("taints"))


def _deployments(rng, team, count, replicas, cpus, memories, extra=None):
    extra = {"nodeSelector": {TEAM: team}, **(extra or {})}
    return [deployment(f"{team}-{i}", rng.randint(*replicas), rng.choice(cpus), rng.choice(memories),
                       namespace=team, extra_spec=extra) for i in range(count)]


OD_AMD64 = [("karpenter.sh/capacity-type", "In", ["on-demand"]), ("kubernetes.io/arch", "In", ["amd64"])]
SPOT_AMD64 = [("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]), ("kubernetes.io/arch", "In", ["amd64"])]


def services(mode="preset", cap=None, seed=11):
    """Stateless web services: 30 Deployments, 250m-4 CPU, 512Mi-8Gi, on spot with on-demand fallback."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("web", ["spot", "multi-zone"], mode, cap, SPOT_AMD64)]
    return objs + _deployments(rng, "web", 30, (10, 60), ("250m", "500m", "1", "2", "4"),
                               ("512Mi", "1Gi", "2Gi", "4Gi", "8Gi"))


def jvm(mode="preset", cap=None, seed=12):
    """JVM services: 1-4 CPU with 4 GiB per CPU or more (heap + metaspace), on-demand."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("jvm", ["general", "multi-zone"], mode, cap, OD_AMD64)]
    return objs + _deployments(rng, "jvm", 14, (4, 30), ("1", "2", "4"), ("4Gi", "6Gi", "8Gi", "12Gi", "16Gi"))


def batch(mode="preset", cap=None, seed=13):
    """Batch workers: CPU-heavy 2-8 CPU pods, tainted pool, spot first (amd64 images)."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("batch", ["batch"], mode, cap, SPOT_AMD64,
                               [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}])]
    return objs + _deployments(rng, "batch", 12, (10, 50), ("2", "4", "8"), ("2Gi", "4Gi", "8Gi", "16Gi"),
                               extra={"tolerations": BATCH_TOLERATION})


def memory_heavy(mode="preset", cap=None, seed=14):
    """Caches and in-memory stores: 8-64 GiB per pod, little CPU, on-demand."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("cache", ["general", "multi-zone"], mode, cap, OD_AMD64)]
    return objs + _deployments(rng, "cache", 10, (3, 15), ("500m", "1", "2"), ("8Gi", "16Gi", "32Gi", "64Gi"))


def many_small(mode="preset", cap=None, seed=15):
    """Sidecar-sized microservices: 50-250m CPU, 64-512Mi, many replicas (pod density matters)."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("micro", ["spot", "multi-zone"], mode, cap, SPOT_AMD64)]
    return objs + _deployments(rng, "micro", 40, (10, 40), ("50m", "100m", "250m"), ("64Mi", "128Mi", "256Mi", "512Mi"))


def spread_anti(mode="preset", cap=None, seed=16):
    """Services with zonal spread and hostname anti-affinity (replicas one per node)."""
    rng = random.Random(seed)
    objs = [nodeclass(), _pool("ha", ["general", "multi-zone"], mode, cap, OD_AMD64)]
    objs += _deployments(rng, "ha", 12, (10, 40), ("250m", "500m", "1", "2"), ("512Mi", "1Gi", "2Gi", "4Gi"))
    for i in range(6):
        labels = {"app": f"spread-{i}"}
        tsc = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels}}]
        objs.append(deployment(f"spread-{i}", rng.randint(9, 30), rng.choice(("500m", "1", "2")),
                               rng.choice(("1Gi", "2Gi", "4Gi")), namespace="ha", labels=labels,
                               extra_spec={"nodeSelector": {TEAM: "ha"}, "topologySpreadConstraints": tsc}))
    for i in range(3):
        labels = {"app": f"db-{i}"}
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
        objs.append(deployment(f"db-{i}", rng.randint(3, 6), "2", "8Gi", namespace="ha", labels=labels,
                               extra_spec={"nodeSelector": {TEAM: "ha"}, "affinity": anti}))
    return objs


def gpu_and_cpu(mode="preset", cap=None, seed=17):
    """Training pods (1 GPU each) on a tainted GPU pool next to the CPU services that feed them."""
    rng = random.Random(seed)
    gpu_open = [("karpenter.sh/capacity-type", "In", ["on-demand"]),
                ("karpenter.k8s.aws/instance-gpu-manufacturer", "In", ["nvidia"])]
    objs = [nodeclass(), _pool("app", ["general", "multi-zone"], mode, cap, OD_AMD64),
            _pool("ml", ["gpu"], mode, None, gpu_open,
                  [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])]
    objs += _deployments(rng, "app", 15, (5, 30), ("250m", "500m", "1", "2"), ("1Gi", "2Gi", "4Gi"))
    for i in range(6):
        objs.append(deployment(f"train-{i}", rng.randint(2, 6), rng.choice(("4", "8")), rng.choice(("16Gi", "32Gi")),
                               namespace="ml", gpu="1",
                               extra_spec={"nodeSelector": {TEAM: "ml"}, "tolerations": GPU_TOLERATION}))
    return objs


REALISTIC = {
    "services (spot)": services,
    "JVM (on-demand)": jvm,
    "batch (spot, tainted)": batch,
    "memory-heavy": memory_heavy,
    "many small pods": many_small,
    "spread + anti-affinity": spread_anti,
    "GPU next to CPU": gpu_and_cpu,
}
