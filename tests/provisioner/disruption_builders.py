"""Builders for cluster snapshots (NodePools with a disruption block, Karpenter nodes, bound pods,
PDBs, NodeClaims) and a runner for `provisioner.disruption.controller.consolidate`."""
from __future__ import annotations

from provisioner.disruption.controller import consolidate
from provisioner.state.reader import load_cluster
from tests.provisioner.prov_builders import ZONES, catalog, itype, nodeclass, pod, req

# Prices per hour, on-demand; spot is half (itype's default).
TYPES = (
    itype("c.large", 2, 4, price=0.08), itype("m.large", 2, 8, price=0.10), itype("m.xlarge", 4, 16, price=0.20),
    itype("m.2xlarge", 8, 32, price=0.40), itype("m.4xlarge", 16, 64, price=0.80),
)
ALLOCATABLE = {"c.large": ("1930m", "3Gi"), "m.large": ("1930m", "7Gi"), "m.xlarge": ("3920m", "14Gi"),
               "m.2xlarge": ("7910m", "29Gi"), "m.4xlarge": ("15890m", "59Gi")}


def pool(name="default", policy="WhenEmptyOrUnderutilized", after="0s", budgets=None, capacity_types=("on-demand",),
         replicas=None, **extra):
    disruption = {"consolidationPolicy": policy, "consolidateAfter": after}
    if budgets is not None:
        disruption["budgets"] = budgets
    spec = {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                   "name": "default"},
                                  "requirements": [req("karpenter.sh/capacity-type", "In", *capacity_types)]}},
            "disruption": disruption, **extra}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def knode(name, itype_name="m.xlarge", pool_name="default", zone="test-zone-1", capacity_type="on-demand",
          initialized=True, ready=True, deleting=False, annotations=None):
    cpu, memory = ALLOCATABLE[itype_name]
    labels = {"karpenter.sh/nodepool": pool_name, "node.kubernetes.io/instance-type": itype_name,
              "topology.kubernetes.io/zone": zone, "karpenter.sh/capacity-type": capacity_type,
              "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "karpenter.sh/registered": "true"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    meta = {"name": name, "labels": labels, "annotations": dict(annotations or {})}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def bound(name, node, cpu="1", memory="1Gi", labels=None, annotations=None, owner=("apps/v1", "ReplicaSet"),
          priority=None, namespace="default", **kwargs):
    p = pod(name, namespace=namespace, labels=labels or {"app": name.rsplit("-", 1)[0]}, node_name=node,
            cpu=cpu, memory=memory, **kwargs)
    p["metadata"]["annotations"] = dict(annotations or {})
    if owner:
        p["metadata"]["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": "owner"}]
    if priority is not None:
        p["spec"]["priority"] = priority
    p["status"] = {"phase": "Running"}
    return p


def pdb(name, labels, allowed=0, namespace="default", **spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, **spec}, "status": {"disruptionsAllowed": allowed}}


def nodeclaim(name, node, consolidatable=True, deleting=False):
    meta = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    # While consolidateAfter runs, Karpenter clears the condition rather than setting it False.
    conditions = [{"type": "Initialized", "status": "True"}]
    if consolidatable:
        conditions.append({"type": "Consolidatable", "status": "True"})
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, "requirements": []},
            "status": {"nodeName": node, "conditions": conditions}}


def run(*objects, types=TYPES, spot_to_spot=None, pools=None, now=None):
    objs = list(pools if pools is not None else [pool()]) + [nodeclass()] + list(objects)
    return consolidate(load_cluster(objs), catalog=catalog(*types), zones=ZONES, spot_to_spot=spot_to_spot, now=now)


def why(result) -> dict:
    return dict(result.blocked)


def acted(result) -> list:
    return [(a.kind, a.reason, a.nodes) for a in result.actions]
