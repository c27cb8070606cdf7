"""Mixed workloads for the cost benchmark (part b): deterministic object dicts on the real catalog."""
from __future__ import annotations

import random

CPUS = ("250m", "500m", "1", "2", "4")
MEMORIES = ("512Mi", "1Gi", "2Gi", "4Gi", "8Gi")


def nodeclass(name="default"):
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-bench",
                      "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                      "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]}}


def nodepool(name, requirements, labels=None, taints=None, weight=None):
    spec = {"template": {"metadata": {"labels": labels or {}},
                         "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                                  "requirements": [{"key": k, "operator": op, "values": list(v)} for k, op, v in requirements],
                                  "taints": taints or []}}}
    if weight is not None:
        spec["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


GENERAL = [("karpenter.k8s.aws/instance-category", "In", ["c", "m", "r"]),
           ("karpenter.k8s.aws/instance-generation", "Gt", ["5"]),
           ("karpenter.k8s.aws/instance-size", "NotIn", ["metal"])]


def deployment(name, replicas, cpu, memory, namespace="default", extra_spec=None, labels=None, gpu=None):
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = gpu
    spec = {"containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}], **(extra_spec or {})}
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def _services(rng, count, prefix, **kwargs):
    return [deployment(f"{prefix}-{i}", rng.randint(10, 80), rng.choice(CPUS), rng.choice(MEMORIES), **kwargs)
            for i in range(count)]


def generic(seed=1, capacity_types=("spot", "on-demand"), archs=("amd64", "arm64"), max_cpu=None):
    """Stateless services (30 Deployments, mixed shapes) on one general-purpose NodePool."""
    rng = random.Random(seed)
    requirements = GENERAL + [("karpenter.sh/capacity-type", "In", list(capacity_types)),
                              ("kubernetes.io/arch", "In", list(archs))]
    if max_cpu:  # the usual guard against Karpenter filling one giant node
        requirements.append(("karpenter.k8s.aws/instance-cpu", "Lt", [str(max_cpu + 1)]))
    return [nodeclass(), nodepool("general", requirements)] + _services(rng, 30, "svc")


def teams_with_gpu(seed=3):
    """The platform's teams: web on spot+on-demand, batch on spot, ml-training on tainted GPU nodes."""
    rng = random.Random(seed)
    team = "karpenter-platform.io/team"
    gpu_toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pools = [
        nodepool("web-general", GENERAL + [("karpenter.sh/capacity-type", "In", ["spot", "on-demand"])], {team: "web"}),
        nodepool("batch-spot", [("karpenter.k8s.aws/instance-category", "In", ["c", "m"]),
                                ("karpenter.k8s.aws/instance-generation", "Gt", ["5"]),
                                ("karpenter.sh/capacity-type", "In", ["spot"])], {team: "batch"}),
        nodepool("ml-training-gpu", [("karpenter.k8s.aws/instance-gpu-manufacturer", "In", ["nvidia"]),
                                     ("karpenter.sh/capacity-type", "In", ["on-demand"])], {team: "ml-training"},
                 taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
    ]
    objs = [nodeclass()] + pools
    objs += _services(rng, 15, "web", namespace="web", extra_spec={"nodeSelector": {team: "web"}})
    objs += _services(rng, 10, "batch", namespace="batch", extra_spec={"nodeSelector": {team: "batch"}})
    for i in range(6):
        objs.append(deployment(f"train-{i}", rng.randint(2, 8), rng.choice(("4", "8")), rng.choice(("16Gi", "32Gi")),
                               namespace="ml", gpu="1",
                               extra_spec={"nodeSelector": {team: "ml-training"}, "tolerations": gpu_toleration}))
    return objs


def with_topology(seed=4):
    """Generic services plus zonal spread and hostname anti-affinity: the bound ignores topology."""
    rng = random.Random(seed)
    pool = nodepool("general", GENERAL + [("karpenter.sh/capacity-type", "In", ["spot", "on-demand"])])
    objs = [nodeclass(), pool] + _services(rng, 20, "svc")
    for i in range(5):
        labels = {"app": f"spread-{i}"}
        tsc = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels}}]
        objs.append(deployment(f"spread-{i}", rng.randint(10, 40), rng.choice(CPUS), rng.choice(MEMORIES), labels=labels,
                               extra_spec={"topologySpreadConstraints": tsc}))
    for i in range(3):
        labels = {"app": f"db-{i}"}
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
        objs.append(deployment(f"db-{i}", rng.randint(3, 9), "1", "4Gi", labels=labels, extra_spec={"affinity": anti}))
    return objs


WORKLOADS = {  # name -> (objects factory, generic: no topology of its own)
    "services, open c/m/r pool (up to 96xlarge), spot+OD": (lambda: generic(1), True),
    "services, pool <= 32 vCPU, spot+OD, both archs": (lambda: generic(1, max_cpu=32), True),
    "services, pool <= 32 vCPU, on-demand amd64": (lambda: generic(2, ("on-demand",), ("amd64",), 32), True),
    "teams: web, batch (spot), GPU training": (teams_with_gpu, False),
    "services + zonal spread + anti-affinity": (with_topology, False),
}
