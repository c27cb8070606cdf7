"""The provisioner's JSON answers are the same bytes on every run: two processes with different
string hash seeds (PYTHONHASHSEED) print identical output for simulate, tune, consolidate, drift
and replay over the dev stack's manifests and the repository's examples."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from offline.render import write_build
from tests.harness import PROJECT_DIR, render

SEEDS = ("1", "2")


def provisioner(seed: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "provisioner", *args], cwd=PROJECT_DIR,
                          env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def changed_copy(manifests: Path, out: Path) -> Path:
    """The manifests with one NodePool's requirements and one EC2NodeClass's tags changed (drift)."""
    out.mkdir()
    for path in manifests.iterdir():
        document = yaml.safe_load(path.read_text())
        if path.name == "nodepool-batch-jobs.yaml":
            document["spec"]["template"]["spec"]["requirements"].append(
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["6"]})
        if path.name == "ec2nodeclass-default.yaml":
            document["spec"].setdefault("tags", {})["cost-center"] = "1234"
        (out / path.name).write_text(yaml.safe_dump(document, sort_keys=False))
    return out


@pytest.mark.slow
def test_provisioner_json_is_the_same_whatever_the_hash_seed(tmp_path):
    write_build(render("dev"), tmp_path / "dev")
    manifests, examples = tmp_path / "dev" / "manifests", PROJECT_DIR / "examples"
    changed = changed_copy(manifests, tmp_path / "changed")
    trace = tmp_path / "trace.yaml"
    provisioner(SEEDS[0], "trace", "--synthetic", "--days", "1", "--services", "4", "--pods", "40", "--out", str(trace))
    commands = {
        "simulate": ["simulate", "-f", str(manifests), "-f", str(examples / "workloads")],
        "tune": ["tune", "-f", str(manifests), "-f", str(examples / "workloads")],
        "consolidate": ["consolidate", "-f", str(manifests), "-f", str(examples / "snapshots" / "dev-cluster.yaml"),
                        "--at", "2026-11-24T12:00"],
        "drift": ["drift", "--before", str(manifests), "--after", str(changed)],
        "replay": ["replay", "-f", str(manifests), "--trace", str(trace), "--until", "6h"],
    }
    for name, args in commands.items():
        first, second = (provisioner(seed, *args, "-o", "json") for seed in SEEDS)
        assert first == second, name
