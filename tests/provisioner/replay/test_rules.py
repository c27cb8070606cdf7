"""Each modelled rule of the replay, with the upstream file it follows (kubernetes-sigs/karpenter
v1.14.1 unless said otherwise)."""
import yaml

from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import base, cronjob, deployment, job, nodeclass, nodepool, pdb, replay

SCALE = lambda n, at="1h", name="web": {"at": at, "scale": {"kind": "Deployment", "name": name, "replicas": n}}  # noqa: E731


def _first_launch(out):
    return [e["time_s"] for e in out["timeline"] if e["nodes"]][0]


def test_batcher_closes_a_window_after_the_idle_duration(tmp_path, capsys):
    """pkg/controllers/provisioning/batcher.go: each trigger extends the window by batchIdleDuration."""
    events = [{"at": "0s", "apply": deployment(replicas=0)}] + [SCALE(i, f"{i * 500}ms") for i in range(1, 9)]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="10m")
    assert _first_launch(out) == 4.0 + 1.0  # the last pod came at 4 s
    assert out["summary"]["nodes_launched"] == 1  # one batch, one NodeClaim
    _, out, _ = replay(capsys, tmp_path, base(), events, "--batch-idle", "200ms", until="10m")
    assert _first_launch(out) == 0.7  # the first pod alone: 0.5 s + 200 ms


def test_batcher_closes_a_window_at_the_max_duration(tmp_path, capsys):
    """batcher.go: a window never lasts more than batchMaxDuration (10 s by default) from its first trigger."""
    events = [{"at": "0s", "apply": deployment(replicas=0)}] + [SCALE(i, f"{i * 800}ms") for i in range(1, 30)]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="10m")
    assert _first_launch(out) == 0.8 + 10.0
    _, out, _ = replay(capsys, tmp_path, base(), events, "--batch-max", "5s", until="10m")
    assert _first_launch(out) == 0.8 + 5.0


def test_kube_scheduler_binds_to_existing_capacity_before_karpenter_launches(tmp_path, capsys):
    """The provisioner's existing-node path (pkg/controllers/provisioning/scheduling/scheduler.go
    existing nodes first): a pod that fits a Ready node binds at once, nothing is launched."""
    events = [{"at": "0s", "apply": deployment(replicas=2)}, SCALE(3, "10m")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="20m")
    assert out["summary"]["nodes_launched"] == 1
    waits = out["summary"]["pending_seconds"]
    assert waits["p50"] == 61.0 and sorted([waits["max"], 0.0])[0] == 0.0
    assert [e for e in out["timeline"] if e["time_s"] == 600.0] == []  # bound in the same instant: no pending step


def test_in_flight_nodeclaims_count_as_capacity(tmp_path, capsys):
    """pkg/controllers/state/statenode.go: a launched NodeClaim not yet Ready is capacity for the next
    batch (its pods are nominated); no second NodeClaim for a pod that fits it."""
    events = [{"at": "0s", "apply": deployment(replicas=1, cpu="500m")}, SCALE(2, "20s")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="10m")
    assert out["summary"]["nodes_launched"] == 1
    assert out["summary"]["pending_seconds"]["max"] == 61.0
    assert out["summary"]["pending_seconds"]["p50"] in (41.0, 51.0, 61.0)  # the second waits until the node is Ready


def test_node_startup_is_launch_to_ready(tmp_path, capsys):
    """NodeClaim lifecycle (launch, registration, initialization) takes --node-startup."""
    _, out, _ = replay(capsys, tmp_path, base(), [{"at": "0s", "apply": deployment()}], "--node-startup", "3m",
                       until="10m")
    assert out["summary"]["pending_seconds"]["max"] == 181.0


def test_emptiness_waits_for_consolidate_after_and_the_consolidation_state(tmp_path, capsys):
    """pkg/controllers/disruption/emptiness.go (ComputeCommands returns early while IsConsolidated),
    nodeclaim/disruption/consolidation.go (Consolidatable once consolidateAfter has passed since the
    last pod event) and state/cluster.go (that condition does not mark the cluster unconsolidated;
    ConsolidationState resets 5 minutes after the last change): in a quiet cluster the empty node
    goes 5 minutes after it emptied; any later change lets the pass see it sooner."""
    events = [{"at": "0s", "apply": deployment(replicas=2)}, SCALE(0)]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    [d] = out["disruptions"]
    assert d["reason"] == "empty" and d["time_s"] == 3600 + 300 and d["pods_evicted"] == 0
    assert out["summary"]["nodes_terminated"] == 1 and out["timeline"][-1]["nodes"] == 0
    # a pending pod is no change for consolidation; deleting one is (Cluster.DeletePod)
    stuck = {"at": "0s", "apply": deployment("stuck", replicas=1, node_selector={"no": "such-label"})}
    _, out, _ = replay(capsys, tmp_path, base(), [stuck] + events + [SCALE(2, "3700s", "stuck")], until="2h")
    assert [d["time_s"] for d in out["disruptions"]] == [3900.0]
    _, out, _ = replay(capsys, tmp_path, base(), [stuck] + events + [SCALE(0, "3700s", "stuck")], until="2h")
    assert [d["time_s"] for d in out["disruptions"]] == [3700.0]


def test_when_empty_policy_never_consolidates_an_underutilized_node(tmp_path, capsys):
    """pkg/controllers/disruption/consolidation.go ShouldDisrupt: WhenEmpty leaves non-empty nodes."""
    manifests = [nodeclass(), nodepool(policy="WhenEmpty")]
    events = [{"at": "0s", "apply": deployment(replicas=10)}, SCALE(1)]
    _, out, _ = replay(capsys, tmp_path, manifests, events, until="3h")
    assert out["disruptions"] == []


def test_consolidate_after_never_disables_consolidation(tmp_path, capsys):
    manifests = [nodeclass(), nodepool(after="Never")]
    _, out, _ = replay(capsys, tmp_path, manifests, [{"at": "0s", "apply": deployment(replicas=2)}, SCALE(0)])
    assert out["disruptions"] == []


def test_budgets_gate_consolidation_and_their_schedule_is_on_the_wall_clock(tmp_path, capsys):
    """pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason and Budget.IsActive: `nodes: 0` during a
    schedule's window blocks; once the window ends the next pass acts."""
    budgets = [{"nodes": "0", "schedule": "0 0 * * *", "duration": "2h"}, {"nodes": "10%"}]
    manifests = [nodeclass(), nodepool(budgets=budgets)]
    events = [{"at": "0s", "apply": deployment(replicas=2)}, SCALE(0, "30m"), SCALE(1, "3h"), SCALE(0, "3h1m")]
    _, out, _ = replay(capsys, tmp_path, manifests, events, "--start", "2026-01-05T00:00:00Z", until="4h")
    # empty since 00:30:30, deleted when the window closes at 02:00 (no other change happened)
    assert [(d["reason"], d["time_s"]) for d in out["disruptions"]][0] == ("empty", 7200.0)
    _, out, _ = replay(capsys, tmp_path, manifests, events, "--start", "2026-01-05T02:00:00Z", until="4h")
    assert out["disruptions"][0]["time_s"] == 1800 + 300  # outside the window: at the 5-minute reset


def test_do_not_disrupt_pods_block_consolidation(tmp_path, capsys):
    """pkg/controllers/state/statenode.go ValidatePodsDisruptable: karpenter.sh/do-not-disrupt."""
    events = [{"at": "0s", "apply": deployment(replicas=10, annotations={"karpenter.sh/do-not-disrupt": "true"})},
              SCALE(1)]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    assert out["disruptions"] == []
    events[0] = {"at": "0s", "apply": deployment(replicas=10)}
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    assert [d["reason"] for d in out["disruptions"]] == ["underutilized"]


def test_a_pdb_allowing_no_disruption_blocks_consolidation(tmp_path, capsys):
    """pkg/utils/pdb/pdb.go CanEvictPods: the PDB's disruptionsAllowed (computed from the replayed pods)."""
    events = [{"at": "0s", "apply": deployment(replicas=10)}, {"at": "0s", "apply": pdb(min_available="100%")}, SCALE(1)]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    assert out["disruptions"] == []
    events[1] = {"at": "0s", "apply": pdb(max_unavailable=1)}
    _, out, _ = replay(capsys, tmp_path, base(), events, until="3h")
    assert [d["reason"] for d in out["disruptions"]] == ["underutilized"]


def test_expiration_is_forceful_and_not_gated_by_budgets(tmp_path, capsys):
    """pkg/controllers/nodeclaim/expiration/controller.go (v1, designs/forceful-expiration.md): the
    NodeClaim is deleted at launch + expireAfter whatever the budgets say; its pods are drained
    and provisioned anew (no pre-spun replacement)."""
    manifests = [nodeclass(), nodepool(expire="2h", budgets=[{"nodes": "0"}])]
    _, out, _ = replay(capsys, tmp_path, manifests, [{"at": "0s", "apply": deployment(replicas=3)}], until="3h")
    [d] = out["disruptions"]
    assert d == {"time_s": 7201.0, "reason": "expired", "nodes": ["default-00001"], "replacements": [],
                 "pods_evicted": 3}
    assert out["summary"]["nodes_launched"] == 2


def test_expiration_waits_for_do_not_disrupt_pods_until_the_termination_grace_period(tmp_path, capsys):
    """pkg/controllers/node/termination/terminator: do-not-disrupt pods are not evicted until
    terminationGracePeriod has passed since the NodeClaim's deletion."""
    manifests = [nodeclass(), nodepool(expire="1h", grace="30m")]
    events = [{"at": "0s", "apply": deployment(replicas=1, annotations={"karpenter.sh/do-not-disrupt": "true"})}]
    _, out, _ = replay(capsys, tmp_path, manifests, events, until="2h")
    at = {e["time_s"]: e for e in out["timeline"]}
    assert at[3601 + 1800]["nodes"] == 0  # held until expiry + 30m, then forced: the pod is pending
    assert at[3601 + 1800]["pending_pods"] == 1 and at[3601 + 1801]["nodes"] == 1
    assert out["disruptions"][0]["pods_evicted"] == 1


def test_drift_replaces_nodes_within_the_drifted_budget(tmp_path, capsys):
    """pkg/controllers/disruption/drift.go and nodeclaim/disruption/drift.go: a NodePool template change
    drifts its nodes; a replacement is launched first, the node drained once it is Ready."""
    changed = nodepool(labels={"team": "a"})
    events = [{"at": "0s", "apply": deployment(replicas=2)}, {"at": "1h", "apply": changed}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    [d] = out["disruptions"]
    assert d["reason"] == "drifted" and d["time_s"] == 3600.0 and d["nodes"] == ["default-00001"]
    assert d["replacements"] == ["default-00002"] and d["pods_evicted"] == 2
    assert out["summary"]["pending_seconds"]["max"] == 61.0  # drained only when the replacement was Ready
    blocked = nodepool(labels={"team": "a"}, budgets=[{"nodes": "0", "reasons": ["Drifted"]}])
    events[1] = {"at": "1h", "apply": blocked}
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    assert out["disruptions"] == []


def test_spot_interruption_drains_at_the_notice_and_the_instance_goes_two_minutes_later(tmp_path, capsys):
    """aws/karpenter-provider-aws pkg/controllers/interruption/controller.go: a spot interruption
    warning deletes the NodeClaim at once; EC2 reclaims the instance 2 minutes after the notice."""
    events = [{"at": "0s", "apply": deployment(replicas=2)}, {"at": "1h", "interrupt": {"node": "default-00001"}}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    [d] = out["disruptions"]
    assert d["reason"] == "interrupted" and d["time_s"] == 3600.0 and d["pods_evicted"] == 2
    assert out["summary"]["nodes_launched"] == 2


def test_spot_interruption_of_a_fraction_is_seeded(tmp_path, capsys):
    manifests = [nodeclass(), {**nodepool(), "spec": {**nodepool()["spec"], "template": {"metadata": {}, "spec": {
        **nodepool()["spec"]["template"]["spec"], "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]}}}}]
    events = [{"at": "0s", "apply": deployment(replicas=8, cpu="1500m")},
              {"at": "1h", "interrupt": {"instanceType": "m5.large", "fraction": 0.5}}]
    runs = [replay(capsys, tmp_path, manifests, events, "--seed", seed, until="2h")[1] for seed in ("1", "1", "2")]
    assert runs[0] == runs[1]
    hit = lambda out: sorted(n for d in out["disruptions"] if d["reason"] == "interrupted" for n in d["nodes"])  # noqa: E731
    assert len(hit(runs[0])) == 4 and len(hit(runs[2])) == 4
    assert hit(runs[0]) != hit(runs[2])


def test_job_pods_run_for_run_for_then_complete(tmp_path, capsys):
    """kubernetes pkg/controller/job: parallelism pods at a time until completions succeed."""
    events = [{"at": "0s", "apply": job(parallelism=2, completions=4), "runFor": "10m"}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="1h")
    pending = [(e["time_s"], e["pending_pods"]) for e in out["timeline"]]
    assert pending[0] == (0.0, 2)
    assert out["summary"]["pods_evicted"] == 0
    # the second wave binds at 61 + 600 s on the same node; the node is empty at 61 + 1200 s
    [d] = out["disruptions"]
    assert d["reason"] == "empty" and d["time_s"] == 61 + 1200 + 300


def test_job_run_for_from_the_pod_template_annotation(tmp_path, capsys):
    events = [{"at": "0s", "apply": job(annotations={"karpenter-platform.io/run-for": "5m"})}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="1h")
    assert out["disruptions"][0]["time_s"] == 61 + 300 + 300


def test_cronjob_runs_on_its_schedule(tmp_path, capsys):
    """kubernetes pkg/controller/cronjob with robfig/cron schedules (provisioner/disruption/cron.py)."""
    events = [{"at": "0s", "apply": cronjob(schedule="*/20 * * * *"), "runFor": "2m"}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="1h")
    tl = out["timeline"]
    starts = [b["time_s"] for a, b in zip(tl, tl[1:]) if b["pending_pods"] == 1 and a["pending_pods"] == 0]
    assert starts == [1200.0, 2400.0, 3600.0]


def test_evicted_pods_are_recreated_by_their_controller(tmp_path, capsys):
    events = [{"at": "0s", "apply": deployment(replicas=3)}, {"at": "1h", "interrupt": {"node": "default-00001"}}]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    after = [e for e in out["timeline"] if e["time_s"] >= 3600]
    assert after[0]["pending_pods"] == 3 and after[-1]["pending_pods"] == 0


def test_daemonset_overhead_counts_on_every_node(tmp_path, capsys):
    """pkg/controllers/provisioning/scheduling (daemon overhead): a 1-CPU DaemonSet needs a larger node."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}},
                   "spec": {"containers": [{"name": "a", "image": "a", "resources": {"requests": {"cpu": "1"}}}]}}}}
    events = [{"at": "0s", "apply": deployment(replicas=1, cpu="1500m")}]
    _, plain, _ = replay(capsys, tmp_path, base(), events, until="1h")
    _, loaded, _ = replay(capsys, tmp_path, base() + [ds], events, until="1h")
    assert plain["timeline"][-1]["price_usd_hour"] == 0.096  # m5.large
    assert loaded["timeline"][-1]["price_usd_hour"] == 0.192  # m5.xlarge


def test_disruption_runs_on_changes_not_on_a_blind_tick():
    """pkg/controllers/disruption/controller.go: a week with no change runs a handful of passes."""
    objs = base()
    trace = parse_trace({"events": [{"at": "0s", "apply": deployment(replicas=3)}]}, "t")
    run = Replay(objs, None, trace, Options(until=7 * 86400))
    run.run()
    assert run.passes <= 5
    trace = parse_trace(yaml.safe_load(yaml.safe_dump({"events": [{"at": "0s", "apply": deployment(replicas=3)}] + [
        SCALE(3 + i % 2, f"{h}h") for i, h in enumerate(range(1, 25))]})), "t")
    run = Replay(objs, None, trace, Options(until=86400))
    run.run()
    assert 24 <= run.passes <= 24 * 4


def test_a_consolidation_command_is_dropped_when_its_candidate_changes_during_the_validation_wait(tmp_path, capsys):
    """pkg/controllers/disruption/validation.go: the command waits consolidationTTL (15 s) and is
    validated again; a pod bound to the empty node meanwhile voids it."""
    events = [{"at": "0s", "apply": deployment(replicas=2)}, SCALE(0), SCALE(1, "3905s")]
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    assert 3900.0 not in [d["time_s"] for d in out["disruptions"]]
    events[2] = SCALE(1, "3920s")  # after the wait: the node is already gone
    _, out, _ = replay(capsys, tmp_path, base(), events, until="2h")
    assert [(d["reason"], d["time_s"]) for d in out["disruptions"]][0] == ("empty", 3900.0)
    gone = [e["time_s"] for e in out["timeline"] if e["nodes"] == 0 and e["time_s"] > 3600]
    assert gone[0] == 3915.0  # deleted when the 15 s wait ended


def test_the_replayed_cluster_as_objects_reads_back_into_the_same_consolidation_answer():
    """cluster_objects renders the replayed state as the objects the disruption API reads
    (provisioner/README.md "Disruption API"); `consolidate` over them decides what the replay did."""
    from datetime import datetime

    from provisioner.disruption.consolidation import consolidate
    from provisioner.disruption.snapshot import load_snapshot
    from provisioner.replay.disruption import cluster_objects

    trace = parse_trace({"events": [{"at": "0s", "apply": deployment(replicas=10)}, SCALE(2)]}, "t")
    run = Replay(base(), None, trace, Options(until=3600 + 29))  # just before consolidateAfter passes
    run.run()
    wall = datetime(2026, 1, 5, 1, 0, 31)
    objects = [o for o, _ in run.karpenter] + cluster_objects(run.cluster, run.pool_specs, [], set(), 3631.0, wall)
    result = consolidate(load_snapshot(objects, judged=True), now=wall)  # the replay's own NodeClaims
    [action] = result.actions
    assert action.kind == "replace" and action.nodes == ["default-00001"]
    assert action.replacement.instance_type == "m5.xlarge"
    out = Replay(base(), None, trace, Options(until=7200.0)).run()
    assert out["disruptions"][0]["nodes"] == ["default-00001"] and out["disruptions"][0]["time_s"] == 3900.0
