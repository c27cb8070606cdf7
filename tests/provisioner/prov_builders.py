"""Builders for Kubernetes object dicts and small catalogs used by the provisioner tests."""
from __future__ import annotations

from provisioner import simulate

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


# What the EC2NodeClass CRD requires (a role or an instance profile, subnets, security groups):
# the provisioner refuses a class the API server would refuse.
REQUIRED_NODECLASS_SPEC = {"subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                           "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}]}


def nodeclass(name="default", **spec):
    body = {"amiSelectorTerms": [{"alias": "al2023@latest"}], **REQUIRED_NODECLASS_SPEC, **spec}
    if "instanceProfile" not in body:
        body.setdefault("role", "KarpenterNodeRole-test")
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": body}


def nodepool(name="default", requirements=(), labels=None, taints=(), startup_taints=(), limits=None, weight=None,
             nodeclass_name="default", replicas=None):
    tspec = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass_name},
             "requirements": [req(*r) if isinstance(r, tuple) else r for r in requirements]}
    if taints:
        tspec["taints"] = list(taints)
    if startup_taints:
        tspec["startupTaints"] = list(startup_taints)
    spec = {"template": {"metadata": {"labels": dict(labels or {})}, "spec": tspec}}
    if limits is not None:
        spec["limits"] = limits
    if weight is not None:
        spec["weight"] = weight
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def req(key, operator, *values, min_values=None):
    out = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    if min_values is not None:
        out["minValues"] = min_values
    return out


def taint(key, value="", effect="NoSchedule"):
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def pod_spec(cpu=None, memory=None, node_selector=None, required=None, preferred=None, tolerations=(),
             spread=(), affinity=None, anti_affinity=None, affinity_preferred=None, anti_preferred=None,
             resources=None, init=None, host_port=None, extra=None):
    requests = dict(resources or {})
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container = {"name": "app", "image": "app", "resources": {"requests": requests}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec = {"containers": [container]}
    if init:
        spec["initContainers"] = init
    if node_selector:
        spec["nodeSelector"] = node_selector
    affinity_spec = {}
    if required is not None or preferred is not None:
        node_aff = {}
        if required is not None:  # list of terms, each a list of requirement dicts
            node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in required]}
        if preferred is not None:  # list of (weight, [requirements])
            node_aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "preference": {"matchExpressions": list(term)}} for w, term in preferred]
        affinity_spec["nodeAffinity"] = node_aff
    if affinity or affinity_preferred:
        affinity_spec["podAffinity"] = {}
        if affinity:
            affinity_spec["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(affinity)
        if affinity_preferred:
            affinity_spec["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in affinity_preferred]
    if anti_affinity or anti_preferred:
        affinity_spec["podAntiAffinity"] = {}
        if anti_affinity:
            affinity_spec["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti_affinity)
        if anti_preferred:
            affinity_spec["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in anti_preferred]
    if affinity_spec:
        spec["affinity"] = affinity_spec
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    spec.update(extra or {})
    return spec


def pod(name="pod", namespace="default", labels=None, node_name=None, **kwargs):
    spec = pod_spec(**kwargs)
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}, "spec": spec}


def deployment(name="app", replicas=1, namespace="default", labels=None, **kwargs):
    labels = dict(labels or {"app": name})
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec(**kwargs)}}}


def daemonset(name="agent", namespace="kube-system", **kwargs):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**kwargs)}}}


def node(name, labels=None, allocatable=None, taints=(), capacity=None):
    status = {"allocatable": allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    if capacity:
        status["capacity"] = capacity
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"taints": list(taints)}, "status": status}


def spread(key, max_skew=1, labels=None, when="DoNotSchedule", **extra):
    out = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
           "labelSelector": {"matchLabels": dict(labels or {"app": "x"})}}
    out.update(extra)
    return out


def term(key, labels=None, **extra):
    return {"topologyKey": key, "labelSelector": {"matchLabels": dict(labels or {"app": "x"})}, **extra}


def itype(name, cpu, memory_gib, arch="amd64", price=None, zones=ZONES, capacity_types=("spot", "on-demand"),
          max_pods=110, gpus=0, gpu_name=None, spot_price=None, **extra):
    """A catalog entry whose offerings we set explicitly (so tests choose prices and zones)."""
    price = price if price is not None else round(0.05 * cpu + 0.01 * memory_gib, 4)
    family, _, size = name.partition(".")
    offerings = []
    for zone in zones:
        for ct in capacity_types:
            p = price if ct == "on-demand" else (spot_price if spot_price is not None else round(price * 0.5, 6))
            offerings.append({"zone": zone, "capacity_type": ct, "price": p})
    item = {"name": name, "vcpu": cpu, "memory_mib": int(memory_gib * 1024), "arch": arch, "max_pods": max_pods,
            "family": family, "size": size, "category": family[0], "generation": int(family[1]) if family[1:2].isdigit() else 1,
            "hypervisor": "nitro", "cpu_manufacturer": "aws" if arch == "arm64" else "intel",
            "offerings": offerings, "price_od_usd_hour": price}
    if gpus:
        item.update(gpus=gpus, gpu_manufacturer="nvidia", gpu_name=gpu_name or "t4", gpu_memory_mib=16384)
    item.update(extra)
    return item


def catalog(*types):
    return {"region": "test-region", "instance_types": list(types)}


DEFAULT_TYPES = (
    itype("m5.large", 2, 8), itype("m5.xlarge", 4, 16), itype("m5.2xlarge", 8, 32), itype("m5.4xlarge", 16, 64),
    itype("c5.large", 2, 4), itype("c5.xlarge", 4, 8), itype("c5.2xlarge", 8, 16),
    itype("m6g.large", 2, 8, arch="arm64", price=0.08), itype("m6g.xlarge", 4, 16, arch="arm64", price=0.16),
    itype("g4dn.xlarge", 4, 16, price=0.526, gpus=1, gpu_name="t4"),
    itype("g5.2xlarge", 8, 32, price=1.212, gpus=1, gpu_name="a10g"),
)


def run(*objects, types=DEFAULT_TYPES, zones=ZONES, pools=None, classes=None, **kwargs):
    """Simulate objects with a default NodePool/EC2NodeClass unless given, on a small catalog."""
    objs = list(objects)
    kinds = {o.get("kind") for o in objs}
    if "NodePool" not in kinds and pools is None:
        objs.append(nodepool())
    if "EC2NodeClass" not in kinds and classes is None:
        objs.append(nodeclass())
    return simulate(objs, catalog=catalog(*types), region="test-region", zones=zones, **kwargs)


def placement(result) -> dict:
    """pod name -> index of the NodeClaim it landed on."""
    return {p: i for i, nc in enumerate(result.nodeclaims) for p in nc.pods}


def nodeclaim_of(result, pod_name):
    for nc in result.nodeclaims:
        if pod_name in nc.pods:
            return nc
    return None


def reasons(result) -> dict:
    return {u.pod: u.reason for u in result.unschedulable}


def fake_type(name, cpu, memory, pods=110, arch="amd64", zones=ZONES, capacity_types=("spot", "on-demand"),
              price=None, os=("linux",), extra_requirements=(), extra_capacity=None, offerings=None, overhead=None):
    """An InstanceType model with exact capacity, like Karpenter's fake.NewInstanceType (no AWS formula)."""
    from kubefacts import labels as L
    from provisioner.models import InstanceType, Offering
    from kubefacts.quantity import milli as parse
    from provisioner.scheduling.requirements import Requirement, Requirements
    capacity = {"cpu": parse(cpu), "memory": parse(memory), "pods": parse(pods), **(extra_capacity or {})}
    if price is None:
        price = 0.1 * capacity["cpu"] / 1000 + 0.1 * capacity["memory"] / 1000 / 2**30
    if offerings is None:
        offerings = [Offering(z, ct, price) for z in zones for ct in capacity_types]
    else:
        offerings = [Offering(z, ct, p) for z, ct, p in offerings]
    reqs = Requirements([
        Requirement.in_(L.INSTANCE_TYPE, name), Requirement.in_(L.ARCH, arch), Requirement.in_(L.OS, *os),
        Requirement.in_(L.ZONE, *sorted({o.zone for o in offerings})),
        Requirement.in_(L.CAPACITY_TYPE, *sorted({o.capacity_type for o in offerings})), *extra_requirements])
    return InstanceType(name, reqs, capacity, dict(overhead or {}), offerings)


def run_core(*objects, types, pools=None):
    """Schedule object dicts against explicit InstanceType models, every NodePool getting `types`."""
    from provisioner.api import plan_pools
    from provisioner.loader import load_objects
    objs = list(objects)
    if not any(o.get("kind") == "NodePool" for o in objs if isinstance(o, dict)) and pools is None:
        objs.append(nodepool())
    inputs = load_objects(objs)
    per_pool = pools or {}
    return plan_pools(inputs, [(np, per_pool.get(np.name, types)) for np in inputs.nodepools])


def karpenter_type(name, cpu="4", memory="4Gi", pods=5, arch="amd64", os=("darwin", "linux", "windows"),
                   extra_capacity=None, offerings=None, extra_requirements=()):
    """Karpenter's fake.NewInstanceType: spot in zones 1-2, on-demand in 1-3, 100m/10Mi kube-reserved,
    priced 0.1 per CPU + 0.1 per GB (+1.0 per GPU)."""
    from kubefacts.quantity import milli as parse
    cap = {"cpu": parse(cpu), "memory": parse(memory)}
    price = 0.1 * cap["cpu"] / 1000 + 0.1 * cap["memory"] / 1000 / 1e9 + (1.0 if extra_capacity else 0.0)
    if offerings is None:
        offerings = [("test-zone-1", "spot", price), ("test-zone-2", "spot", price), ("test-zone-1", "on-demand", price),
                     ("test-zone-2", "on-demand", price), ("test-zone-3", "on-demand", price)]
    return fake_type(name, cpu, memory, pods, arch, os=os, extra_capacity=extra_capacity, offerings=offerings,
                     overhead={"cpu": 100, "memory": parse("10Mi")}, extra_requirements=extra_requirements)


def karpenter_default_types():
    """fake.CloudProvider's default instance types."""
    from kubefacts.quantity import milli as parse
    return [
        karpenter_type("default-instance-type"),
        karpenter_type("small-instance-type", cpu="2", memory="2Gi"),
        karpenter_type("gpu-vendor-instance-type", extra_capacity={"fake.com/vendor-a": parse("2")}),
        karpenter_type("gpu-vendor-b-instance-type", extra_capacity={"fake.com/vendor-b": parse("2")}),
        karpenter_type("arm-instance-type", cpu="16", memory="128Gi", arch="arm64", os=("darwin", "ios", "linux", "windows")),
        karpenter_type("single-pod-instance-type", pods=1),
    ]
