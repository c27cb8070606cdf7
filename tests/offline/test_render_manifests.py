"""The render writes every Kubernetes object and helm release of every shipped stack to
build/<stack>/manifests/, exactly as declared."""

import pytest
import yaml

from offline.render import write_build
from tests.harness import STACKS, render

EXPECTED = {
    "dev": {"helm-karpenter-crd", "helm-karpenter", "helm-odigos", "ec2nodeclass-default", "ec2nodeclass-gpu",
            "nodepool-web-frontend", "nodepool-web-api", "nodepool-ml-training-gpu", "nodepool-batch-jobs",
            "namespace-odigos-system", "serviceaccount-odigos-prepare-nodes", "clusterrole-odigos-prepare-nodes",
            "daemonset-odiglet"},
    "staging": {"helm-karpenter-crd", "helm-karpenter", "helm-odigos", "ec2nodeclass-default", "ec2nodeclass-gpu",
                "nodepool-web-frontend", "nodepool-web-api", "nodepool-ml-training-gpu", "nodepool-batch-jobs",
                "nodepool-batch-arm-jobs", "namespace-odigos-system", "nodeoverlay-odigos-instrumentation"},
    "prod": {"helm-karpenter-crd", "helm-karpenter", "ec2nodeclass-default", "ec2nodeclass-gpu",
             "nodepool-web-frontend", "nodepool-web-api", "nodepool-ml-training-gpu", "nodepool-batch-jobs",
             "nodepool-batch-arm-jobs"},
}


@pytest.mark.parametrize("stack", STACKS)
def test_render_writes_every_object_of_the_kubernetes_side(stack, tmp_path):
    capture = render(stack)
    write_build(capture, tmp_path)
    written = {p.stem for p in (tmp_path / "manifests").iterdir()}
    # The prepare Job's name, and its binding's (released by the Job), carry the integration hash.
    jobs = {name for name in written if name.startswith("job-odigos-prepare-nodes-")}
    bindings = {name for name in written if name.startswith("clusterrolebinding-odigos-prepare-nodes-")}
    assert len(jobs) == len(bindings) == (1 if stack == "dev" else 0)
    assert {j.removeprefix("job-") for j in jobs} == {b.removeprefix("clusterrolebinding-") for b in bindings}
    assert EXPECTED[stack] <= written - jobs  # other components (e.g. the provisioner) may add their own


@pytest.mark.parametrize("stack", STACKS)
def test_written_nodepools_are_the_declared_objects(stack, tmp_path):
    capture = render(stack)
    write_build(capture, tmp_path)
    for resource in capture.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        name = resource.inputs["metadata"]["name"]
        assert yaml.safe_load((tmp_path / "manifests" / f"nodepool-{name}.yaml").read_text()) == resource.inputs
