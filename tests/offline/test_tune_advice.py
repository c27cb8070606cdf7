"""`python -m offline.tune`: `provisioner tune` whose candidate changes the policy pack checks in
every environment first (policies.advice), so advice never contradicts a mandatory policy."""

from __future__ import annotations

import json

import yaml

from offline import tune as offline_tune
from policies.advice import refusals, resources_from_objects
from provisioner.cost.tune import tune
from provisioner.loader import load_objects
from provisioner.manifests import read_paths
from tests.harness import PROJECT_DIR, manifests, render

CPU = "karpenter.k8s.aws/instance-cpu"
WORKLOADS = [str(PROJECT_DIR / "examples" / "workloads" / name) for name in ("ml-training.yaml", "daemonsets.yaml")]


def dev_objects():
    capture = render("dev")
    return manifests(capture, "NodePool") + manifests(capture, "EC2NodeClass")


def ml_gpu_caps(changes):
    return [r for c in changes if c["nodepool"] == "ml-training-gpu" for r in c["requirements"] if r["key"] == CPU]


def test_lt_33_on_the_ml_gpu_pool_is_refused_in_staging_and_prod():
    """stacks/teams/ml-training.yaml declares largestPod {cpu: 32, nvidia.com/gpu: 4}: with at most
    32 vCPU no type holds it after kubelet reservations (nodepool-fits-largest-pod, mandatory in
    staging and prod); a 48-vCPU cap does."""
    pools, classes = resources_from_objects(dev_objects())
    pool = pools["ml-training-gpu"]
    own = pool.props["spec"]["template"]["spec"]["requirements"]
    gpu_class = [c for c in classes if c.name == "gpu"]
    found = refusals(pool, gpu_class, own + [{"key": CPU, "operator": "Lt", "values": ["33"]}])
    assert [f.split(":", 2)[:2] for f in found] == [["staging", " nodepool-fits-largest-pod"],
                                                    ["prod", " nodepool-fits-largest-pod"]]
    assert refusals(pool, gpu_class, own + [{"key": CPU, "operator": "Lt", "values": ["49"]}]) == []


def test_tune_with_the_policy_check_never_proposes_the_refused_cap(tmp_path):
    objects = dev_objects()
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    read, origins = read_paths([str(path), *WORKLOADS])
    inputs = load_objects(read, origins)
    plain = tune(inputs, bound=0.0, max_evaluations=60)
    # tune itself keeps the declared largest pod now (tests/provisioner/cost/test_tune_largest_pod.py)
    assert {"key": CPU, "operator": "Lt", "values": ["33"]} not in ml_gpu_caps(plain.change_list())
    checked = tune(inputs, bound=0.0, max_evaluations=60, accept=offline_tune.policy_accept(read))
    assert {"key": CPU, "operator": "Lt", "values": ["33"]} not in ml_gpu_caps(checked.change_list())
    accept = offline_tune.policy_accept(read)
    assert all(accept(c["nodepool"], c["requirements"]) for c in checked.change_list())
    assert checked.tuned.unschedulable <= checked.baseline.unschedulable
    assert plain.refused == 0


def test_offline_tune_command_prints_only_accepted_changes(tmp_path, capsys):
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump_all(dev_objects()))
    assert offline_tune.main(["-f", str(path), *sum((["-f", w] for w in WORKLOADS), []), "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"key": CPU, "operator": "Lt", "values": ["33"]} not in ml_gpu_caps(result["changes"])
    assert result["tuned"]["unschedulable"] <= result["baseline"]["unschedulable"]


def test_offline_tune_without_nodepools_exits_2(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert offline_tune.main(["-f", str(empty)]) == 2
    assert "no NodePool in the input" in capsys.readouterr().err
