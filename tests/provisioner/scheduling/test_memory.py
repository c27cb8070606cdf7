"""Memory of a plan grows with nodes plus pods, not nodes times pending Deployments.

The input that showed it: existing nodes, and Deployments with a preferred zone anti-affinity on
their own pods whose running replicas already fill every zone, each with a pending replica. Each
Deployment's anti-affinity group is its own, so its pods are a scheduling shape of their own; per
shape, every existing node kept a merged copy of its requirements and a skip-pointer dict entry
(200 Deployments on 2,000 nodes: 1.25 GB in the advisor, over its 1 Gi limit; BENCHMARKS.md).
Karpenter keeps no such per-pod cache (pkg/controllers/provisioning/scheduling/existingnode.go
CanAdd merges afresh), so sharing the merge by requirements changes no decision.
"""
from __future__ import annotations

from provisioner import api
from provisioner.scheduling import scheduler as scheduling

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def _objects(nodes: int, deployments: int) -> list[dict]:
    objs = [
        {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
         "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r",
                  "subnetSelectorTerms": [{"tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}},
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
         "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                         "name": "default"}, "requirements": []}}}},
    ]
    for i in range(nodes):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "kubernetes.io/hostname": f"n{i}", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": ZONES[i % 3], "node.kubernetes.io/instance-type": "m5.large"}},
            "status": {"allocatable": {"cpu": "2", "memory": "7Gi", "pods": "110"}}})
    for d in range(deployments):
        labels = {"app": f"d{d}"}
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
        for z in range(3):  # a running replica in every zone: the pending one cannot honour its preference
            objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"d{d}-{z}", "namespace": "default",
                                                                         "labels": labels},
                         "spec": {"nodeName": f"n{(3 * d + z) % nodes}", "containers": [container]},
                         "status": {"phase": "Running"}})
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"d{d}-new", "namespace": "default",
                                                                     "labels": labels},
                     "spec": {"containers": [container], "affinity": {"podAntiAffinity": {
                         "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                             "topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": labels}}}]}}}})
    return objs


def test_per_node_caches_do_not_grow_with_pending_deployments(monkeypatch):
    nodes, deployments = 300, 40
    seen: dict = {}
    build_results = scheduling.build_results

    def capture(targets, *args, **kwargs):
        seen["targets"] = targets
        return build_results(targets, *args, **kwargs)

    share = scheduling.Scheduler._share_by_shape

    def collect(self, variant):
        share(self, variant)
        seen.setdefault("variants", []).append(variant)

    monkeypatch.setattr(scheduling, "build_results", capture)
    monkeypatch.setattr(scheduling.Scheduler, "_share_by_shape", collect)
    result = api.simulate(_objects(nodes, deployments))
    assert (result.to_dict()["summary"]["scheduled"], len(result.nodeclaims)) == (deployments, 0)
    existing = [t for t in seen["targets"] if hasattr(t, "node")]
    assert len(existing) == nodes
    # One merged copy per node and distinct requirements (here one), not per node and Deployment.
    assert max(len(t.merge_cache) for t in existing) <= 2
    # The skip pointers are one compact array per shape, not a dict entry per rejected node.
    assert max(len(v.dead) for v in seen["variants"]) <= 2
