"""The `replay -o json` contract (docs/replay.md "Output"): shape, duration, step timeline,
eviction sums, determinism, --start, file order at equal times."""
from tests.provisioner.replay.replay_builders import base, cronjob, deployment, replay

SCALE = lambda n, at="1h": {"at": at, "scale": {"kind": "Deployment", "name": "web", "replicas": n}}  # noqa: E731


def test_json_is_one_object_with_exactly_the_documented_fields(tmp_path, capsys):
    code, out, _ = replay(capsys, tmp_path, base(), [{"at": "0s", "apply": deployment(replicas=3)}], until="90m")
    assert code == 0
    assert list(out) == ["summary", "by_nodepool", "disruptions", "timeline"]
    assert list(out["summary"]) == ["duration_s", "cost_usd", "node_hours", "nodes_launched", "nodes_terminated",
                                    "pods_evicted", "pending_seconds"]
    assert list(out["summary"]["pending_seconds"]) == ["p50", "p95", "max"]
    assert list(out["by_nodepool"][0]) == ["nodepool", "cost_usd", "node_hours", "nodes_launched"]
    assert list(out["timeline"][0]) == ["time_s", "nodes", "price_usd_hour", "pending_pods"]
    assert out["summary"]["duration_s"] == 5400.0


def test_pending_seconds_run_from_creation_to_binding(tmp_path, capsys):
    """1 s of batch idle, then 60 s of --node-startup: every pod waits 61 s."""
    _, out, _ = replay(capsys, tmp_path, base(), [{"at": "0s", "apply": deployment(replicas=3)}])
    assert out["summary"]["pending_seconds"] == {"p50": 61.0, "p95": 61.0, "max": 61.0}
    _, out, _ = replay(capsys, tmp_path, base(), [{"at": "0s", "apply": deployment(replicas=3)}], "--node-startup", "2m")
    assert out["summary"]["pending_seconds"]["max"] == 121.0


def test_timeline_is_a_step_function_with_an_entry_on_every_change(tmp_path, capsys):
    events = [{"at": "0s", "apply": deployment(replicas=6)}, SCALE(1), SCALE(8, "90m")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    tl = out["timeline"]
    assert tl[0] == {"time_s": 0.0, "nodes": 0, "price_usd_hour": 0.0, "pending_pods": 6}
    assert all(a["time_s"] < b["time_s"] for a, b in zip(tl, tl[1:]))
    assert all({k: v for k, v in a.items() if k != "time_s"} != {k: v for k, v in b.items() if k != "time_s"}
               for a, b in zip(tl, tl[1:]))
    at = lambda t: [e for e in tl if e["time_s"] <= t][-1]  # noqa: E731
    assert at(30)["nodes"] == 1 and at(30)["pending_pods"] == 6
    assert at(61)["pending_pods"] == 0
    assert at(5400)["pending_pods"] == 7  # the scale-up: 7 new pods pending at once
    # node hours integrate the step function of node counts
    hours = sum(a["nodes"] * (b["time_s"] - a["time_s"]) for a, b in zip(tl, tl[1:] + [{"time_s": 10800.0}])) / 3600
    assert abs(hours - out["summary"]["node_hours"]) < 1e-3


def test_summary_evictions_are_the_sum_over_disruptions_and_a_scale_down_is_none(tmp_path, capsys):
    events = [{"at": "0s", "apply": deployment(replicas=10)}, SCALE(2), SCALE(0, "2h")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    assert out["summary"]["pods_evicted"] == sum(d["pods_evicted"] for d in out["disruptions"])
    # the one node is replaced by a smaller one once consolidateAfter (30 s) has passed, at the
    # consolidation state's 5-minute reset after the scale-down (nothing else changed): 2 pods drained
    first = out["disruptions"][0]
    assert first["reason"] == "underutilized" and first["pods_evicted"] == 2 and first["time_s"] == 3900.0
    # the scale to 0 empties the node: deleted as empty, nothing evicted
    assert out["disruptions"][-1]["reason"] == "empty" and out["disruptions"][-1]["pods_evicted"] == 0
    assert out["summary"]["pods_evicted"] == 2


def test_nodes_launched_counts_replacements_but_not_the_starting_cluster(tmp_path, capsys):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "old", "labels": {
        "karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-east-1a",
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
        "status": {"allocatable": {"cpu": "1930m", "memory": "6903Mi", "pods": "29"}}}
    _, out, _ = replay(capsys, tmp_path, base() + [node], [{"at": "0s", "apply": deployment(replicas=1)}], until="1h")
    assert out["timeline"][0]["nodes"] == 1 and out["timeline"][0]["price_usd_hour"] == 0.096
    assert out["summary"]["nodes_launched"] == 0
    assert out["summary"]["pending_seconds"]["max"] == 0.0  # bound to the starting node at once
    _, out, _ = replay(capsys, tmp_path, base(), [{"at": "0s", "apply": deployment(replicas=10)}, SCALE(2)])
    assert out["summary"]["nodes_launched"] == 2  # the first NodeClaim and its consolidation replacement


def test_equal_times_apply_in_file_order(tmp_path, capsys):
    events = [{"at": "0s", "apply": deployment(replicas=1)}, SCALE(5, "10m"), SCALE(2, "10m")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="11m")
    ten = [e for e in out["timeline"] if e["time_s"] == 600.0]
    assert ten and ten[-1]["pending_pods"] in (0, 1)  # ends at 2 replicas: at most one new pod
    events = [{"at": "0s", "apply": deployment(replicas=1)}, SCALE(2, "10m"), SCALE(5, "10m")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="11m")
    assert max(e["pending_pods"] for e in out["timeline"] if e["time_s"] >= 600) >= 3


def test_start_fixes_the_wall_clock_of_cron_schedules(tmp_path, capsys):
    """A CronJob at 09:00 UTC runs 30 min into a replay that starts at 08:30."""
    events = [{"at": "0s", "apply": cronjob(schedule="0 9 * * *"), "runFor": "5m"}]
    _, out, _ = replay(capsys, tmp_path, base(), events, "--start", "2026-03-02T08:30:00Z", until="2h")
    assert [e["time_s"] for e in out["timeline"] if e["pending_pods"]][0] == 1800.0
    _, out, _ = replay(capsys, tmp_path, base(), events, "--start", "2026-03-02T09:30:00+01:00", until="2h")
    assert [e["time_s"] for e in out["timeline"] if e["pending_pods"]][0] == 1800.0  # the same instant
    _, out, _ = replay(capsys, tmp_path, base(), events, "--start", "2026-03-02T09:30:00Z", until="2h")
    assert not any(e["pending_pods"] for e in out["timeline"])  # next firing is tomorrow


def test_the_same_seed_gives_the_same_output_in_any_process(tmp_path):
    """No set or hash order reaches the output: two processes with different hash seeds agree."""
    import os
    import subprocess
    import sys

    import yaml

    from tests.provisioner.replay.replay_builders import job, write, write_trace
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    files = write(tmp_path, "cluster.yaml", *base())
    events = [{"at": "0s", "apply": deployment(replicas=7)}, {"at": "10m", "apply": job(parallelism=5, completions=9),
                                                             "runFor": "7m"},
              SCALE(2, "40m"), {"at": "50m", "apply": cronjob(schedule="*/10 * * * *"), "runFor": "3m"}]
    trace = write_trace(tmp_path, events)
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-m", "provisioner", "replay", "-f", files, "--trace", trace, "--until",
                               "3h", "--seed", "7", "-o", "json"], cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert outs[0] == outs[1] and yaml.safe_load(outs[0])["disruptions"]
