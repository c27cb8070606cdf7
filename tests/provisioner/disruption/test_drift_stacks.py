"""`provisioner drift` over the shipped stacks' renders and a snapshot of a dev cluster."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from provisioner.disruption.drift import drift
from provisioner.manifests import read_paths
from tests.harness import STACKS, manifests, render

SNAPSHOT = Path(__file__).resolve().parents[3] / "examples" / "snapshots" / "dev-nodes.yaml"


def karpenter_objects(stack):
    capture = render(stack)
    return copy.deepcopy(manifests(capture, "NodePool") + manifests(capture, "EC2NodeClass"))


@pytest.mark.parametrize("stack", STACKS)
def test_a_stack_against_itself_does_not_drift(stack):
    objects = karpenter_objects(stack)
    report = drift(objects, copy.deepcopy(objects)).to_dict()
    assert report["summary"] == {"nodepools_drifted": 0, "nodes_replaced": None}
    assert all(not c["drift"] for c in report["nodeclasses"]) and report["nodepools"]


def test_dev_change_replaces_the_nodes_the_readme_shows():
    """The README's example: batch-jobs narrowed to on-demand (requirement drift, drift.go, per
    node labels: only the spot node), the gpu node class's root volume grown (ec2nodeclass.go
    Hash(): blockDeviceMappings, so the ml-training-gpu node), web-frontend's limits raised
    (outside the template: no drift). The managed node group's node is not Karpenter's."""
    before = karpenter_objects("dev")
    after = copy.deepcopy(before)
    for obj in after:
        name = obj["metadata"]["name"]
        if name == "batch-jobs":
            for requirement in obj["spec"]["template"]["spec"]["requirements"]:
                if requirement["key"] == "karpenter.sh/capacity-type":
                    requirement["values"] = ["on-demand"]
        elif name == "gpu" and obj["kind"] == "EC2NodeClass":
            obj["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "300Gi"
        elif name == "web-frontend":
            obj["spec"]["limits"] = {"cpu": "60", "memory": "240Gi"}
    snapshot, origins = read_paths([str(SNAPSHOT)])
    report = drift(before, after, snapshot, snapshot_origins=origins)
    assert {p.name: (p.drift, p.nodes) for p in report.nodepools} == {
        "batch-jobs": (True, 1), "ml-training-gpu": (True, 1), "web-api": (False, 0), "web-frontend": (False, 0)}
    assert report.replaced["batch-jobs"] == ["ip-10-0-1-31.ec2.internal"]
    assert report.to_dict()["summary"] == {"nodepools_drifted": 2, "nodes_replaced": 2}
