"""`tune --replay`: candidate NodePool changes judged by replayed cost, evictions and pending p95
(provisioner/replay/judge.py)."""
import json

import pytest
import yaml

from provisioner.cli import main
from provisioner.replay.judge import verdict, with_changes

from tests.provisioner.replay.replay_builders import deployment, nodeclass, write, write_trace

pytest.importorskip("scipy")

GENERAL = [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
           {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
           {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def _cluster():
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"}, "requirements": GENERAL}},
                     "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}}}
    shapes = [("2", "4Gi", 30), ("1", "2Gi", 40), ("4", "8Gi", 20), ("500m", "1Gi", 60)]
    return [nodeclass(), pool] + [deployment(f"svc-{i}", replicas=n, cpu=c, memory=m) for i, (c, m, n) in enumerate(shapes)]


def test_tune_replay_keeps_changes_that_are_cheaper_over_the_trace(tmp_path, capsys):
    files = write(tmp_path, "c.yaml", *_cluster())
    trace = write_trace(tmp_path, [{"at": "2h", "scale": {"kind": "Deployment", "name": "svc-3", "replicas": 10}}])
    assert main(["tune", "-f", files, "--replay", trace, "--until", "4h", "-o", "json", "--workers", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    judged = data["replay"]
    assert list(judged) == ["baseline", "candidates", "accepted", "tuned"]
    [cand] = judged["candidates"]
    assert cand["nodepool"] == "web" and cand["requirements"] == data["changes"][0]["requirements"]
    assert cand["accepted"] and cand["replay"]["cost_usd"] < judged["baseline"]["cost_usd"]
    assert cand["replay"]["pods_evicted"] <= judged["baseline"]["pods_evicted"]
    assert judged["accepted"] == data["changes"] and judged["tuned"] == cand["replay"]
    assert main(["tune", "-f", files, "--replay", trace, "--until", "4h", "--workers", "1"]) == 0
    assert "Over the trace (replay): baseline $" in capsys.readouterr().out


def test_a_change_that_raises_evictions_or_pending_is_dropped():
    base = {"cost_usd": 10.0, "node_hours": 5, "pods_evicted": 3, "pending_p95_s": 61.0}
    assert verdict(base, {**base, "cost_usd": 9.0}) == (True, "saves $1.00 over the trace")
    assert not verdict(base, {**base, "cost_usd": 9.0, "pods_evicted": 4})[0]
    assert not verdict(base, {**base, "cost_usd": 9.0, "pending_p95_s": 62.0})[0]
    assert not verdict(base, base)[0]


def test_changes_replace_requirements_of_their_key_only():
    objs = _cluster()
    out = with_changes(objs, [{"nodepool": "web", "requirements": [
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["6"]}]}])
    reqs = out[1]["spec"]["template"]["spec"]["requirements"]
    assert [r["key"] for r in reqs] == ["karpenter.k8s.aws/instance-category", "karpenter.sh/capacity-type",
                                        "karpenter.k8s.aws/instance-generation"]
    assert objs[1]["spec"]["template"]["spec"]["requirements"] == GENERAL  # the input is not changed
    assert yaml.safe_dump(out[2]) == yaml.safe_dump(objs[2])
