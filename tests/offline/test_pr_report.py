"""`make pr-report` / `python -m offline.pr_report`: a git copy of the repository with one commit
that adds a taint, rendered at the base and now (one render pair for the whole module)."""
from __future__ import annotations

from tests.provisioner.prov_builders import nodeclass as valid_nodeclass

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from offline import pr_report
from provisioner.disruption.drift import drift

PROJECT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path_factory.mktemp("pr") / "repo"
    subprocess.run(["git", "clone", "--quiet", str(PROJECT), str(clone)], check=True)
    team = clone / "stacks" / "teams" / "web.yaml"
    text = team.read_text()
    assert "      workload: api\n" in text
    team.write_text(text.replace("      workload: api\n",
                                 "      workload: api\n    taints:\n      - {key: dedicated, value: api, effect: NoSchedule}\n", 1))
    subprocess.run([*GIT, "-C", str(clone), "commit", "--quiet", "-am", "web api: dedicated taint"], check=True)
    return clone


@pytest.fixture(scope="module")
def built(repo, tmp_path_factory):
    snapshot = tmp_path_factory.mktemp("snap") / "nodes.yaml"
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"ip-10-0-0-{i}", "labels": {"karpenter.sh/nodepool": pool}}}
             for i, pool in enumerate(["web-api", "web-api", "web-frontend"])]
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return pr_report.build_report(repo, "dev", "HEAD~1", "examples/workloads", [str(snapshot)])


@pytest.mark.slow
def test_report_shows_the_changed_nodepool_and_its_drift_with_node_counts(built):
    """The taint is in the NodePool template hash (karpenter pkg/apis/v1/nodepool.go Hash()), so
    both web-api nodes of the snapshot are replaced; nothing else changes."""
    text, report, _ = built
    assert "| `kubernetes:karpenter.sh/v1:NodePool` | 0 | 1 | 0 |" in text
    assert "changed `kubernetes:karpenter.sh/v1:NodePool`: `nodepool-web-api`" in text
    assert "| `web-api` | 2 | hash `spec.template.spec.taints` |" in text
    assert [p.name for p in report.nodepools if p.drift] == ["web-api"]
    assert "**1** resource change(s) · **1** NodePool(s) drift (2 node(s) replaced)" in text


def test_report_prices_the_workloads_before_and_after(built):
    """The api pods do not tolerate the new taint: they leave web-api for web-frontend's on-demand
    capacity (they select the team and on-demand only), so the plan costs more and leaves no more
    pods unschedulable than before."""
    text, _, _ = built
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:4]]
            for line in text.splitlines() if line.startswith(("| unschedulable pods", "| price"))}
    before, after = (int(v) for v in rows["unschedulable pods"])
    assert after == before
    assert all(v.startswith("$") and v.endswith("/h") for v in rows["price"])
    price_before, price_after = (float(v[1:-2]) for v in rows["price"])
    assert price_after > price_before


def test_report_has_no_policy_changes_for_a_taint(built):
    text, _, findings = built
    assert "No new or fixed findings." in text
    assert not any(f["level"] == "mandatory" for f in findings)


def test_gate_fails_on_drift_only_when_asked(built):
    _, report, findings = built
    assert pr_report.gate(["drift"], report, findings) is True
    assert pr_report.gate(["policy"], report, findings) is False
    assert pr_report.gate([], report, findings) is False


def test_gate_fails_on_a_mandatory_finding():
    quiet = drift([], [])
    assert pr_report.gate(["policy"], quiet, [{"level": "mandatory", "policy": "p"}]) is True
    assert pr_report.gate(["policy"], quiet, [{"level": "advisory", "policy": "p"}]) is False


def test_the_temporary_worktree_is_removed(repo, built):
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True).stdout
    assert len(listed.strip().splitlines()) == 1


def test_unknown_base_exits_2_with_one_line(repo, capsys):
    assert pr_report.main(["dev", "--base", "no-such-ref", "--project-dir", str(repo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --base no-such-ref: not a commit") and err.count("\n") == 1


def test_bad_fail_on_is_a_usage_error(repo):
    with pytest.raises(SystemExit) as exit_:
        pr_report.main(["dev", "--base", "HEAD", "--fail-on", "cost", "--project-dir", str(repo)])
    assert exit_.value.code == 2


def test_resource_diff_groups_by_type():
    before = [{"type": "t:a", "name": "x", "inputs": {"v": 1}}, {"type": "t:a", "name": "gone", "inputs": {}},
              {"type": "t:b", "name": "same", "inputs": {"v": 1}}]
    after = [{"type": "t:a", "name": "x", "inputs": {"v": 2}}, {"type": "t:c", "name": "new", "inputs": {}},
             {"type": "t:b", "name": "same", "inputs": {"v": 1}}]
    changes = pr_report.diff_resources(before, after)
    assert (dict(changes.added), dict(changes.changed), dict(changes.removed)) == (
        {"t:c": ["new"]}, {"t:a": ["x"]}, {"t:a": ["gone"]})
    assert changes.total() == 3


def test_findings_diff_reports_new_and_fixed():
    old = [{"policy": "a", "resource": "r", "message": "m", "level": "advisory"}]
    new = [{"policy": "b", "resource": "r", "message": "m", "level": "mandatory"}]
    assert pr_report.diff_findings(old, new) == (new, old)


def test_makefile_target_passes_the_options():
    dry = subprocess.run(["make", "-n", "pr-report", "STACK=prod", "BASE=origin/main",
                          "SNAPSHOT=nodes.yaml", "WORKLOADS=w/", "FAIL_ON=drift,policy"],
                         cwd=PROJECT, capture_output=True, text=True)
    if dry.returncode != 0 and shutil.which("make") is None:
        pytest.skip("make is not installed")
    command = dry.stdout.replace("\\\n", " ")
    assert "-m offline.pr_report prod --base origin/main --snapshot nodes.yaml" in command
    assert "--workloads w/" in command and "--fail-on drift,policy" in command


def test_missing_snapshot_fails_before_rendering(repo, capsys):
    assert pr_report.main(["dev", "--base", "HEAD~1", "--snapshot", "no-such.yaml", "--project-dir", str(repo)]) == 2
    assert "no-such.yaml: no such file or directory" in capsys.readouterr().err


def _stub_source(root: Path, check_body: str) -> Path:
    """A source tree whose render writes an empty build and whose policy pack is `check_body`."""
    (root / "stacks").mkdir(parents=True)
    (root / "stacks" / "Pulumi.dev.yaml").write_text("config: {}\n")
    (root / "offline").mkdir()
    (root / "offline" / "__init__.py").write_text("")
    (root / "offline" / "render.py").write_text(
        "import sys, pathlib\nout = pathlib.Path(sys.argv[sys.argv.index('--out') + 1])\n"
        "(out / 'manifests').mkdir(parents=True)\n(out / 'resources.json').write_text('[]')\n")
    (root / "policies").mkdir()
    (root / "policies" / "__init__.py").write_text("")
    (root / "policies" / "check.py").write_text(check_body)
    return root


def test_a_policy_pack_that_raises_is_an_error_not_no_findings(tmp_path):
    """A change that breaks the pack (here an import error; policies.check exits 1 with a traceback
    and writes no report) used to read as an empty report, so FAIL_ON=policy passed it."""
    source = _stub_source(tmp_path / "src", "from policies.nowhere import ALL\n")
    with pytest.raises(pr_report.ReportError) as err:
        pr_report.render(source, "dev", tmp_path / "after")
    assert "policy pack" in str(err.value)
    assert "ModuleNotFoundError: No module named 'policies.nowhere'" in str(err.value)


def test_a_policy_pack_that_writes_its_report_passes(tmp_path):
    source = _stub_source(tmp_path / "src", "import sys, pathlib\n"
                          "pathlib.Path(sys.argv[sys.argv.index('--report') + 1]).write_text('[]')\nsys.exit(3)\n")
    pr_report.render(source, "dev", tmp_path / "after")
    assert (tmp_path / "after" / "policy-report.json").read_text() == "[]"

def test_dev_report_fails_on_an_invalid_base_value_that_dev_overrides(tmp_path, capsys):
    """web's frontend limits are overridden in dev: the base (what staging renders) was never checked
    by the dev report; now every render checks it, and the report exits 2 naming it."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "--quiet", str(PROJECT), str(clone)], check=True)
    team = clone / "stacks" / "teams" / "web.yaml"
    text = team.read_text()
    assert 'limits: {cpu: "200", memory: 800Gi}' in text
    team.write_text(text.replace('limits: {cpu: "200", memory: 800Gi}', 'limits: {cpu: "-10", memory: 800Gi}'))
    assert pr_report.main(["dev", "--base", "HEAD", "--project-dir", str(clone)]) == 2
    assert "nodePools[0].limits.cpu: '-10' is negative" in capsys.readouterr().err


def test_makefile_target_passes_the_trace():
    dry = subprocess.run(["make", "-n", "pr-report", "STACK=dev", "BASE=origin/main", "TRACE=week.yaml"],
                         cwd=PROJECT, capture_output=True, text=True)
    if dry.returncode != 0 and shutil.which("make") is None:
        pytest.skip("make is not installed")
    assert "--trace week.yaml" in dry.stdout.replace("\\\n", " ")


def test_a_bad_trace_fails_before_rendering(repo, tmp_path, capsys):
    bad = tmp_path / "trace.yaml"
    bad.write_text("events:\n- {at: 1m, scale: {kind: Deployment, replicas: 1}}\n")
    assert pr_report.main(["dev", "--base", "HEAD~1", "--trace", str(bad), "--project-dir", str(repo)]) == 2
    assert f"{bad}: events[0].scale.name: missing" in capsys.readouterr().err


def test_over_the_trace_section_shows_cost_node_hours_and_evictions_before_and_after():
    """The same trace replayed over the NodePools before and after (provisioner/replay/judge.py before_after)."""
    from provisioner.replay.engine import Options
    from provisioner.replay.judge import before_after
    from provisioner.replay.trace import parse_trace

    def pool(policy):
        return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, "spec": {
            "template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                   "name": "default"},
                                  "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                                    "values": ["m5"]},
                                                   {"key": "karpenter.sh/capacity-type", "operator": "In",
                                                    "values": ["on-demand"]}]}},
            "disruption": {"consolidationPolicy": policy, "consolidateAfter": "30s"}}}
    nodeclass = valid_nodeclass()
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 10, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}
    trace = parse_trace({"events": [{"at": "1h", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}}]}, "t")
    before, after = before_after(([nodeclass, pool("WhenEmpty"), web], None),
                                 ([nodeclass, pool("WhenEmptyOrUnderutilized"), web], None),
                                 trace, Options(until=7200.0), workers=1)
    assert before["pods_evicted"] == 0 and after["evictions_by_reason"] == {"underutilized": 2}
    assert after["cost_usd"] < before["cost_usd"]
    lines = pr_report.replay_lines("week.yaml", 7200.0, before, after)
    assert lines[0] == "### Over the trace (`week.yaml`, 2 h replayed)"
    assert "| pods evicted | 0 | 2 |" in lines and "| evicted: underutilized | 0 | 2 |" in lines
    assert any(line.startswith("| node hours | ") for line in lines)
