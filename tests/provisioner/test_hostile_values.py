"""Values the API server, EC2 pricing or JSON would not hold, refused by `simulate`'s readers with
the file and key path (the hostile corpus runs the same inputs through the CLI)."""
from __future__ import annotations

import json

import pytest
import yaml

from provisioner.cli import main as provisioner_main
from tests.hostile.corpus import _deployment, _nodepool

from tests.provisioner.prov_builders import nodeclass

NODECLASS = nodeclass()  # a valid EC2NodeClass: each test's point is the one bad value


def _simulate(tmp_path, capsys, docs, *extra) -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    rc = provisioner_main(["simulate", "-f", str(path), "-o", "json", *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_fractional_gpu_request_is_refused_not_packed_two_to_a_gpu(tmp_path, capsys):
    """k8s.io/kubernetes pkg/apis/core/validation ValidateResourceQuantityValue: an extended
    resource "must be an integer". The old reader put two 0.5-GPU pods on one GPU."""
    deployment = _deployment(replicas=2)
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "0.5"}, "limits": {"nvidia.com/gpu": "0.5"}}
    rc, out, err = _simulate(tmp_path, capsys, [_nodepool(limits={"nvidia.com/gpu": "8"}), NODECLASS, deployment])
    assert rc == 2 and out == ""
    assert "resources.limits.nvidia.com/gpu: '0.5' must be an integer" in err


def test_whole_gpu_request_and_fractional_cpu_are_read(tmp_path, capsys):
    deployment = _deployment()
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}
    rc, out, _ = _simulate(tmp_path, capsys, [_nodepool(limits={"nvidia.com/gpu": "8"}), NODECLASS, deployment])
    assert rc == 0 and json.loads(out)["nodeclaims"][0]["requests"]["nvidia.com/gpu"] == "1"


@pytest.mark.parametrize("weight", [0, 101, 1000, -5])
def test_nodepool_weight_outside_1_to_100_is_refused(tmp_path, capsys, weight):
    """pkg/apis/v1/nodepool.go: Weight has Minimum 1 and Maximum 100 (the API server refuses more)."""
    rc, _, err = _simulate(tmp_path, capsys, [_nodepool(weight=weight), NODECLASS, _deployment()])
    # The CRD's bounds (minimum 1, maximum 100), in the one validator's words.
    assert rc == 2 and "spec.weight" in err and ("minimum of 1" in err or "maximum of 100" in err)


def test_same_deployment_twice_with_different_specs_is_refused(tmp_path, capsys):
    rc, _, err = _simulate(tmp_path, capsys, [_nodepool(), NODECLASS, _deployment(), _deployment(replicas=5)])
    assert rc == 2 and 'Deployment "default/app": metadata.name' in err and "first defined in" in err


def test_same_deployment_twice_identically_counts_once(tmp_path, capsys):
    rc, out, err = _simulate(tmp_path, capsys, [_nodepool(), NODECLASS, _deployment(replicas=3), _deployment(replicas=3)])
    assert rc == 0 and "defined twice, identically; counted once" in err
    assert json.loads(out)["summary"]["pods"] == 3


@pytest.mark.parametrize("price", [-0.096, float("inf"), float("nan")])
def test_catalog_with_a_negative_or_non_finite_price_is_refused(tmp_path, capsys, price):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"instance_types": [
        {"name": "m5.large", "vcpu": 2, "memory_mib": 8192, "price_od_usd_hour": price},
        {"name": "m5.xlarge", "vcpu": 4, "memory_mib": 16384, "offerings": [
            {"zone": "us-east-1a", "capacity_type": "spot", "price": 0.1}]}]}))
    rc, out, err = _simulate(tmp_path, capsys, [_nodepool(), NODECLASS, _deployment()], "--catalog", str(catalog))
    assert rc == 2 and out == ""
    assert f"{catalog}: instance_types[0]: price_od_usd_hour: price" in err and "finite" in err
