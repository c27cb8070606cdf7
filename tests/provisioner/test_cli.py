"""`provisioner simulate`: output shapes, exit codes and messages, and the example workloads."""
import pytest
import json
import os
import subprocess
import sys

import yaml

from provisioner.cli import main

from tests.provisioner.prov_builders import nodeclass, nodepool, pod, req

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "provisioner", "fixtures", "platform")
EXAMPLES = os.path.join(ROOT, "examples", "workloads")


def write(tmp_path, name, *docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def run_json(capsys, *args):
    code = main(["simulate", *args, "-o", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out else None, out.err


def test_json_output_has_exactly_the_documented_shape(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(), nodeclass(), pod("p", cpu="1"), pod("q", node_selector={"x": "y"}))
    code, data, _ = run_json(capsys, "-f", path)
    assert code == 0
    # The first three keys keep their shape; issue 13 added `rounds`, `ignored` and a NodeClaim's `round`.
    assert list(data) == ["nodeclaims", "unschedulable", "summary", "rounds", "ignored"]
    assert list(data["nodeclaims"][0]) == ["nodepool", "instance_type", "capacity_type", "zone", "price_usd_hour",
                                           "price_is_estimate", "pods", "requests", "allocatable", "instance_type_options",
                                           "round"]
    assert data["rounds"] == 1 and data["ignored"] == []
    assert list(data["unschedulable"][0]) == ["pod", "reason"]
    assert data["summary"] == {"pods": 2, "scheduled": 1, "unschedulable": 1, "nodeclaims": 1,
                               "price_usd_hour": data["nodeclaims"][0]["price_usd_hour"]}


def test_json_quantities_are_kubernetes_strings(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large")]),
                 nodeclass(), pod("p", cpu="1", memory="1Gi"))
    _, data, _ = run_json(capsys, "-f", path)
    claim = data["nodeclaims"][0]
    assert claim["requests"] == {"cpu": "1", "memory": "1Gi", "pods": "1"}
    assert claim["allocatable"] == {"cpu": "1930m", "ephemeral-storage": "17Gi", "memory": "6903Mi", "pods": "29",
                                    "vpc.amazonaws.com/pod-eni": "9"}


def test_table_is_the_default_output(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(), nodeclass(), pod("p", cpu="1"))
    assert main(["simulate", "-f", path]) == 0
    out = capsys.readouterr().out
    assert "NodeClaims to launch (1):" in out and "Summary: 1 pods, 1 scheduled, 0 unschedulable" in out


def test_unschedulable_pods_still_exit_zero(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(), nodeclass(), pod("p", node_selector={"odigos.io/odiglet-installed": "true"}))
    code, data, _ = run_json(capsys, "-f", path)
    assert code == 0 and data["summary"]["unschedulable"] == 1


def test_malformed_yaml_exits_two_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Pod\nmetadata:\n  name: [oops\n")
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:4:") and "malformed YAML" in err


def test_nodepool_without_node_class_ref_exits_two(tmp_path, capsys):
    bad = nodepool("web")
    del bad["spec"]["template"]["spec"]["nodeClassRef"]
    path = write(tmp_path, "pools.yaml", nodeclass(), bad)
    assert main(["simulate", "-f", path]) == 2
    assert f'{path}:' in capsys.readouterr().err


def test_unknown_operator_exits_two_naming_object_and_path(tmp_path, capsys):
    path = write(tmp_path, "pools.yaml", nodepool("web", requirements=[req("kubernetes.io/arch", "Equals", "amd64")]))
    assert main(["simulate", "-f", path]) == 2
    err = capsys.readouterr().err
    assert ('NodePool "web": spec.template.spec.requirements[0].operator: \'Equals\' is not one of '
            "['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']") in err


def test_missing_file_exits_two(tmp_path, capsys):
    assert main(["simulate", "-f", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_missing_catalog_file_exits_two(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(), nodeclass())
    assert main(["simulate", "-f", path, "--catalog", str(tmp_path / "none.json")]) == 2
    assert "catalog file not found" in capsys.readouterr().err


def test_zones_and_region_flags_shape_offerings(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(), nodeclass(), pod("p", cpu="1"))
    _, data, _ = run_json(capsys, "-f", path, "--region", "eu-west-1", "--zones", "eu-west-1b")
    assert data["nodeclaims"][0]["zone"] == "eu-west-1b"


def test_missing_node_class_warns_and_leaves_pods_pending(tmp_path, capsys):
    path = write(tmp_path, "a.yaml", nodepool(nodeclass_name="absent"), pod("p"))
    code, data, err = run_json(capsys, "-f", path)
    assert code == 0 and 'EC2NodeClass "absent" is not in the input' in err
    assert 'EC2NodeClass "absent" is not in the input' in data["unschedulable"][0]["reason"]


def test_examples_with_platform_fixtures_schedule_all_but_the_odiglet_probe(capsys):
    code, data, _ = run_json(capsys, "-f", EXAMPLES, "-f", FIXTURES)
    assert code == 0
    assert [u["pod"] for u in data["unschedulable"]] == ["default/instrumented-probe"]
    reason = data["unschedulable"][0]["reason"]
    assert 'label "odigos.io/odiglet-installed" does not have known values' in reason
    assert "did not tolerate taint nvidia.com/gpu=true:NoSchedule" in reason
    pools = {p: nc["nodepool"] for nc in data["nodeclaims"] for p in nc["pods"]}
    assert {pools[p] for p in pools if p.startswith("ml-training/")} == {"ml-training-gpu"}
    assert {pools[p] for p in pools if p.startswith("web/")} == {"web-general"}
    assert {pools[p] for p in pools if p.startswith("batch/")} == {"batch-spot"}


@pytest.mark.slow
def test_module_entry_point_runs_from_repo_root():
    proc = subprocess.run([sys.executable, "-m", "provisioner", "simulate", "-f", EXAMPLES, "-f", FIXTURES, "-o", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and json.loads(proc.stdout)["summary"]["scheduled"] == 31


def test_table_writes_each_usage_in_one_unit(tmp_path, capsys):
    """A 3-core pod on a c6a.xlarge (3920m allocatable) read `3/3920m`; and 5Gi of 6584Mi `5Gi/6584Mi`."""
    path = write(tmp_path, "a.yaml", nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "c6a.xlarge")]),
                 nodeclass(), pod("p", cpu="3", memory="5Gi"))
    assert main(["simulate", "-f", path]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "c6a.xlarge" in line)
    assert "3000m/3920m" in row and "5120Mi/6584Mi" in row


def test_v1_nodeclass_with_ami_family_and_no_selector_is_told_the_matching_alias(tmp_path, capsys):
    """karpenter.k8s.aws/v1 EC2NodeClass requires amiSelectorTerms (the CRD's `required`): refused
    as the API server refuses it, naming the alias that amiFamily alone used to mean."""
    legacy = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
              "spec": {"amiFamily": "AL2", "role": "nodes", "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                       "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}}
    path = write(tmp_path, "a.yaml", nodepool(), legacy, pod("p", cpu="1"))
    assert main(["simulate", "-f", path]) == 2
    assert ('EC2NodeClass "default": spec.amiSelectorTerms: Required value (the karpenter.k8s.aws/v1 EC2NodeClass '
            "schema); for amiFamily AL2 the matching alias is al2@<version>, e.g. {alias: al2@latest}"
            ) in capsys.readouterr().err


def test_type_errors_echo_the_value_written(tmp_path, capsys):
    bad = nodepool()
    bad["spec"]["template"]["spec"]["requirements"] = "amd64"
    path = write(tmp_path, "a.yaml", bad, nodeclass())
    assert main(["simulate", "-f", path]) == 2
    assert "spec.template.spec.requirements: 'amd64' is not of type 'array'" in capsys.readouterr().err
