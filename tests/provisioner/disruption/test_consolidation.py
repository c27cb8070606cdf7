"""`provisioner consolidate`: Karpenter v1.14's disruption pass on a snapshot. Each test names the
upstream file of kubernetes-sigs/karpenter (tag v1.14.1) whose rule it checks."""
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioner.disruption.budgets import allowed_disruptions
from provisioner.disruption.candidates import eviction_cost, score_move, PoolTotals
from provisioner.disruption.snapshot import Budget, PodInfo
from tests.harness import PROJECT_DIR
from tests.provisioner.disruption_builders import (acted, bound, knode, nodeclaim, pdb, pool, run, why, TYPES)
from tests.provisioner.prov_builders import itype

WAIT_EMPTINESS = "waits for a later pass: emptiness acted in this pass"


# --- method order and emptiness -----------------------------------------------------------------

def test_empty_node_is_deleted_first_and_consolidation_waits():
    """controller.go: methods run in order (emptiness first) and the first with a command ends the
    pass; emptiness.go: empty candidates are deleted with reason empty."""
    r = run(knode("empty"), knode("busy"), knode("other"), bound("web-0", "busy"), bound("web-1", "other"))
    assert acted(r) == [("delete", "empty", ["empty"])]
    assert r.actions[0].savings == pytest.approx(0.20)
    assert why(r)["busy"].startswith(WAIT_EMPTINESS)
    assert r.price_before == pytest.approx(0.60) and r.price_after == pytest.approx(0.40)


def test_daemonset_and_mirror_pods_leave_a_node_empty():
    """types.go Candidate.IsEmpty and pkg/utils/pod IsReschedulable: pods owned by a DaemonSet or a
    Node (mirror pods) need no new home, so the node counts as empty."""
    r = run(knode("n1"), bound("agent-x", "n1", owner=("apps/v1", "DaemonSet")),
            bound("static-n1", "n1", owner=("v1", "Node")))
    assert acted(r) == [("delete", "empty", ["n1"])]


def test_negative_priority_pods_do_not_count_against_emptiness():
    """pkg/utils/disruption EvictionCost and types.go IsEmpty: a pod whose eviction cost clamps to
    zero or below adds no reschedule cost, so its node is Empty."""
    r = run(knode("n1"), bound("low-0", "n1", priority=-2**25 * 2))
    assert acted(r) == [("delete", "empty", ["n1"])]


def test_eviction_cost_follows_priority_and_deletion_cost():
    """pkg/utils/disruption/disruption.go EvictionCost: 1 + deletion-cost/2^27 + priority/2^25, in [-10, 10]."""
    def info(annotations=None, priority=None):
        return PodInfo("d/p", "d", "n", {}, dict(annotations or {}), (), priority, False, False, False, False)
    assert eviction_cost(info()) == 1.0
    assert eviction_cost(info(priority=2**25)) == 2.0
    assert eviction_cost(info({"controller.kubernetes.io/pod-deletion-cost": str(2**27)})) == 2.0
    assert eviction_cost(info(priority=10**9)) == 10.0
    assert eviction_cost(info({"controller.kubernetes.io/pod-deletion-cost": "x"})) == 1.0


# --- budgets ------------------------------------------------------------------------------------

def test_budget_percentage_rounds_up_and_smallest_applicable_wins():
    """pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason: a percentage of the nodes rounded
    up; the smallest budget that lists the reason (or none) decides."""
    assert allowed_disruptions((Budget("10%", None),), 5, "Empty")[0] == 1
    assert allowed_disruptions((Budget("10%", None),), 0, "Empty")[0] == 0
    budgets = (Budget("50%", None), Budget("1", ("Underutilized",)), Budget("0", ("Drifted",)))
    assert allowed_disruptions(budgets, 10, "Underutilized")[0] == 1
    assert allowed_disruptions(budgets, 10, "Empty")[0] == 5


def test_empty_budget_limits_how_many_empty_nodes_go():
    """emptiness.go ComputeCommands: each empty candidate takes one from its NodePool's Empty
    budget; the rest are left for later with the budget named."""
    r = run(knode("e1"), knode("e2"), knode("e3"), pools=[pool(budgets=[{"nodes": "1"}])])
    assert len(r.actions) == 1 and len(r.actions[0].nodes) == 1
    blocked = why(r)
    assert len(blocked) == 2
    assert all("disruption budget (nodes: '1') allows 1 of its 3 nodes" in w for w in blocked.values())


def test_budget_for_underutilized_does_not_stop_emptiness():
    """nodepool.go: a budget listing reasons applies only to them."""
    r = run(knode("empty"), knode("busy"), bound("web-0", "busy"),
            pools=[pool(budgets=[{"nodes": "0", "reasons": ["Underutilized"]}])])
    assert acted(r) == [("delete", "empty", ["empty"])]


def test_underutilized_budget_of_zero_blocks_consolidation():
    """helpers.go BuildDisruptionBudgetMapping and singlenodeconsolidation.go: a NodePool with no
    Underutilized disruptions left is skipped, and the budget is the reason."""
    r = run(knode("a"), knode("b"), bound("web-0", "a"), bound("web-1", "b"),
            pools=[pool(budgets=[{"nodes": "0", "reasons": ["Underutilized"]}])])
    assert r.actions == []
    assert "allows 0 of its 2 nodes to be disrupted for Underutilized" in why(r)["a"]


def test_notready_and_deleting_nodes_use_the_budget():
    """helpers.go BuildDisruptionBudgetMapping: NotReady or deleting nodes count as disrupting."""
    r = run(knode("e1"), knode("sick", ready=False), bound("x-0", "sick"),
            pools=[pool(budgets=[{"nodes": "1"}])])
    assert r.actions == []
    assert "1 are already NotReady or deleting" in why(r)["e1"]


# --- candidates ---------------------------------------------------------------------------------

def test_node_do_not_disrupt_annotation_blocks():
    """pkg/controllers/state/statenode.go ValidateNodeDisruptable: karpenter.sh/do-not-disrupt on the node."""
    r = run(knode("n1", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert r.actions == []
    assert "karpenter.sh/do-not-disrupt" in why(r)["n1"]


def test_pod_do_not_disrupt_annotation_blocks_naming_the_pod():
    """statenode.go ValidatePodsDisruptable and pkg/utils/pod IsDisruptable: an active pod with
    karpenter.sh/do-not-disrupt makes its node no candidate."""
    r = run(knode("n1"), bound("job-0", "n1", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert r.actions == []
    assert why(r)["n1"].startswith('pod default/job-0 has the annotation karpenter.sh/do-not-disrupt: "true"')


def test_pdb_without_disruptions_blocks_naming_the_pdb():
    """pkg/utils/pdb/pdb.go CanEvictPods: a PDB with disruptionsAllowed 0 blocks its pods' node."""
    r = run(knode("a"), knode("b", "m.2xlarge"), bound("db-0", "a", labels={"app": "db"}), bound("web-0", "b"),
            pdb("db", {"app": "db"}, allowed=0))
    assert "PodDisruptionBudget default/db allows no disruption now" in why(r)["a"]
    assert "pod default/db-0" in why(r)["a"]


def test_pod_under_two_pdbs_blocks():
    """pdb.go isEvictable: more than one PDB on a pod blocks eviction whatever they allow."""
    r = run(knode("a"), bound("db-0", "a", labels={"app": "db", "tier": "x"}),
            pdb("one", {"app": "db"}, allowed=1), pdb("two", {"tier": "x"}, allowed=1))
    assert "several PodDisruptionBudgets (default/one, default/two)" in why(r)["a"]


def test_pdb_with_room_does_not_block():
    """pdb.go: a PDB allowing a disruption lets the pod go."""
    r = run(knode("a"), knode("b"), bound("db-0", "a", cpu="500m", labels={"app": "db"}), bound("web-0", "b", cpu="500m"),
            pdb("db", {"app": "db"}, allowed=1))
    assert acted(r)[0][0] == "delete" and acted(r)[0][1] == "underutilized"


def test_uninitialized_and_deleting_nodes_are_no_candidates():
    """statenode.go ValidateNodeDisruptable: not initialized, or already being deleted."""
    r = run(knode("new", initialized=False), knode("going", deleting=True))
    assert "not initialized" in why(r)["new"]
    assert why(r)["going"] == "node is already being deleted"


def test_when_empty_policy_keeps_underutilized_nodes():
    """consolidation.go ShouldDisrupt: WhenEmpty NodePools only lose empty nodes."""
    r = run(knode("a"), knode("b"), bound("web-0", "a", cpu="500m"), bound("web-1", "b", cpu="500m"),
            pools=[pool(policy="WhenEmpty")])
    assert r.actions == []
    assert why(r)["a"] == "NodePool 'default' has consolidationPolicy WhenEmpty and the node is not empty"


def test_consolidate_after_never_disables_consolidation():
    """emptiness.go and consolidation.go ShouldDisrupt: consolidateAfter Never disables both."""
    r = run(knode("e"), pools=[pool(after="Never")])
    assert r.actions == [] and "consolidateAfter: Never" in why(r)["e"]


def test_node_without_consolidatable_condition_waits_for_consolidate_after():
    """emptiness.go ShouldDisrupt and pkg/controllers/nodeclaim/disruption/consolidation.go: the
    NodeClaim's Consolidatable condition is set only once consolidateAfter has passed since the
    last pod event (it is cleared, not set False, before)."""
    claim = nodeclaim("e-claim", "e", consolidatable=False)
    claim["status"]["lastPodEventTime"] = "2026-11-23T20:00:00Z"
    r = run(knode("e"), claim, pools=[pool(after="10m")])
    assert r.actions == []
    assert why(r)["e"] == ("its NodeClaim e-claim has no Consolidatable=True condition: Karpenter sets it once "
                           "consolidateAfter (10m) of NodePool 'default' has passed since the node's last pod event at "
                           "2026-11-23T20:00:00Z")
    assert not any(a.startswith("consolidateAfter") for a in r.assumptions)


def test_missing_consolidatable_condition_leads_before_an_old_pod_event():
    """A last pod event 8 hours old with consolidateAfter 10m: what holds the node is the missing
    condition (the controller has not set it), not the time; the message said the time first."""
    from datetime import datetime, timezone

    claim = nodeclaim("e-claim", "e", consolidatable=False)
    claim["status"]["lastPodEventTime"] = "2026-11-23T20:00:00Z"
    r = run(knode("e"), claim, pools=[pool(after="10m")], now=datetime(2026, 11, 24, 4, 0, tzinfo=timezone.utc))
    assert why(r)["e"].startswith("its NodeClaim e-claim has no Consolidatable=True condition")


def test_default_budget_is_named_when_it_holds_the_other_nodes_back():
    """A NodePool without budgets gets the CRD's default {nodes: 10%} (pkg/apis/v1/nodepool.go):
    with 3 empty nodes it allows 1; the others are held back by a budget the user never wrote."""
    r = run(knode("e1"), knode("e2"), knode("e3"))
    assert len(r.actions) == 1 and len(r.actions[0].nodes) == 1
    blocked = why(r)
    assert len(blocked) == 2
    assert all(w.startswith("empty, but Karpenter's default disruption budget (nodes: '10%'; NodePool 'default' sets no "
                            "budgets) allows 1 of its 3 nodes to be disrupted for Empty") for w in blocked.values())


def test_static_nodepool_is_never_consolidated():
    """emptiness.go / consolidation.go ShouldDisrupt: OwnedByStaticNodePool."""
    r = run(knode("e"), pools=[pool(replicas=1)])
    assert r.actions == [] and "static" in why(r)["e"]


def test_nodes_without_nodeclaim_are_unmanaged_when_nodeclaims_are_given():
    """statenode.go ValidateNodeDisruptable: a node without a NodeClaim is not Karpenter's."""
    r = run(knode("a"), knode("b"), nodeclaim("a-claim", "a"))
    assert acted(r) == [("delete", "empty", ["a"])]
    assert "no NodeClaim" in why(r)["b"]


# --- single-node consolidation -------------------------------------------------------------------

def test_single_node_deletes_a_node_whose_pods_fit_elsewhere():
    """singlenodeconsolidation.go and consolidation.go computeConsolidation: no new NodeClaim is a delete."""
    r = run(knode("big", "m.2xlarge"), knode("small", "m.xlarge"),
            bound("web-0", "big", cpu="1"), bound("web-1", "small", cpu="1"))
    assert acted(r) == [("delete", "underutilized", ["big"])]
    assert r.actions[0].replacement is None and r.actions[0].savings == pytest.approx(0.40)


def test_single_node_replaces_with_a_cheaper_type():
    """consolidation.go computeConsolidation: one new NodeClaim cheaper than the candidate is a replace."""
    r = run(knode("big", "m.4xlarge"), bound("web-0", "big", cpu="1", memory="2Gi"))
    assert acted(r) == [("replace", "underutilized", ["big"])]
    rep = r.actions[0].replacement
    assert (rep.instance_type, rep.capacity_type) == ("c.large", "on-demand")
    assert r.actions[0].savings == pytest.approx(0.80 - 0.08)
    d = r.to_dict()["actions"][0]["replacement"]
    assert d == {"instance_type": "c.large", "capacity_type": "on-demand", "zone": "test-zone-1", "price_usd_hour": 0.08}


def test_no_cheaper_replacement_blocks_with_the_price():
    """consolidation.go: "Can't replace with a cheaper node" when no option is cheaper."""
    r = run(knode("n", "c.large"), bound("web-0", "n", cpu="1", memory="1Gi"))
    assert r.actions == []
    assert why(r)["n"].startswith("no cheaper replacement exists for $0.0800/h")


def test_pods_that_fit_nowhere_block_consolidation():
    """consolidation.go: not all pods would schedule (a required node selector no NodePool offers)."""
    r = run(knode("n", "m.xlarge"), bound("web-0", "n", node_selector={"disk": "nvme"}))
    assert r.actions == [] and "its pods would not all fit elsewhere: default/web-0" in why(r)["n"]


def test_on_demand_or_spot_pool_replaces_on_demand_with_spot():
    """consolidation.go computeConsolidation: when the NodePool allows spot and on-demand, the
    replacement launches as spot."""
    r = run(knode("n", "m.xlarge"), bound("web-0", "n", cpu="1", memory="2Gi"),
            pools=[pool(capacity_types=("spot", "on-demand"))])
    rep = r.actions[0].replacement
    assert (rep.instance_type, rep.capacity_type, rep.price) == ("c.large", "spot", 0.04)


def test_spot_to_spot_needs_the_feature_gate():
    """consolidation.go computeSpotToSpotConsolidation: off by default (SpotToSpotConsolidation)."""
    objs = (knode("n", "m.4xlarge", capacity_type="spot"), bound("web-0", "n", cpu="1", memory="2Gi"))
    r = run(*objs, pools=[pool(capacity_types=("spot",))])
    assert r.actions == [] and "SpotToSpotConsolidation feature gate is off" in why(r)["n"]


def test_single_spot_to_spot_needs_fifteen_cheaper_types():
    """consolidation.go: a single spot node is replaced only with at least 15 cheaper spot types
    (MinInstanceTypesForSpotToSpotConsolidation), launched from the cheapest 15."""
    objs = (knode("n", "m.4xlarge", capacity_type="spot"), bound("web-0", "n", cpu="1", memory="2Gi"))
    r = run(*objs, pools=[pool(capacity_types=("spot",))], spot_to_spot=True)
    assert r.actions == [] and "needs 15 cheaper instance types" in why(r)["n"] and "only 4 fit" in why(r)["n"]
    many = TYPES + tuple(itype(f"x{i}.large", 2, 8, price=0.10 + i / 100) for i in range(12))
    r = run(*objs, pools=[pool(capacity_types=("spot",))], spot_to_spot=True, types=many)
    assert acted(r) == [("replace", "underutilized", ["n"])]
    assert r.actions[0].replacement.capacity_type == "spot" and len(r.actions[0].replacement.options) == 15


# --- multi-node consolidation -------------------------------------------------------------------

def test_multi_node_merges_nodes_into_one_cheaper_node():
    """multinodeconsolidation.go firstNConsolidationOption: the largest prefix of candidates (binary
    search) that can go at once, here all three replaced by one smaller node."""
    r = run(knode("a", "m.2xlarge"), knode("b", "m.2xlarge"), knode("c", "m.2xlarge"),
            bound("web-0", "a", cpu="1", memory="2Gi"), bound("web-1", "b", cpu="1", memory="2Gi"),
            bound("web-2", "c", cpu="1", memory="2Gi"), pools=[pool(budgets=[{"nodes": "100%"}])])
    assert [(a.kind, a.method, sorted(a.nodes)) for a in r.actions] == [("replace", "multi-node", ["a", "b", "c"])]
    assert r.actions[0].replacement.instance_type == "m.xlarge"
    assert r.actions[0].savings == pytest.approx(1.20 - 0.20)
    assert r.candidates["multi-node"] == 3


def test_multi_node_never_relaunches_a_candidates_type():
    """multinodeconsolidation.go filterOutSameInstanceType: two m.xlarge nodes are not merged into
    one m.xlarge (the replacement must be cheaper than a candidate of its own type), so multi-node
    finds nothing and single-node deletes one node instead."""
    r = run(knode("a", "m.xlarge"), knode("b", "m.xlarge"),
            bound("web-0", "a", cpu="1500m", memory="5Gi"), bound("web-1", "b", cpu="1500m", memory="5Gi"),
            pools=[pool(budgets=[{"nodes": "100%"}])])
    assert [(a.kind, a.method, len(a.nodes)) for a in r.actions] == [("delete", "single-node", 1)]
    other = [n for n, _ in r.blocked]
    assert why(r)[other[0]].startswith("waits for a later pass: single-node consolidation acted on another node")


def test_multi_node_budget_caps_the_command_and_names_the_budget():
    """multinodeconsolidation.go ComputeCommands: candidates beyond the Underutilized budget are
    left out of the command; the budget explains them."""
    r = run(knode("a", "m.2xlarge"), knode("b", "m.2xlarge"), knode("c", "m.2xlarge"),
            bound("web-0", "a", cpu="1", memory="2Gi"), bound("web-1", "b", cpu="1", memory="2Gi"),
            bound("web-2", "c", cpu="1", memory="2Gi"), pools=[pool(budgets=[{"nodes": "2"}])])
    assert [(a.method, len(a.nodes)) for a in r.actions] == [("multi-node", 2)]
    (left, reason), = r.blocked
    assert "allows 2 of its 3 nodes to be disrupted for Underutilized, and this pass's command takes 2" in reason


# --- Balanced -----------------------------------------------------------------------------------

def test_balanced_score_approves_at_one_over_k():
    """balanced.go ScoreMove and types.go ScoreResult: approved when savings/disruption fractions >= 1/2."""
    totals = PoolTotals(total_cost=1.0, total_disruption_cost=10.0)
    assert score_move(0.5, 10.0, totals).approved  # 0.5 / 1.0
    assert not score_move(0.04, 1.0, totals).approved  # 0.04 / 0.1 = 0.4
    assert not score_move(0.5, 1.0, PoolTotals(0.0, 1.0)).approved  # zero totals score zero


def test_balanced_rejects_a_move_that_saves_too_little_for_its_disruption():
    """balanced.go CanPassThreshold/ApproveCommand: a Balanced pool refuses a replace whose share of
    the pool's cost saved is under half its share of the pool's disruption, where
    WhenEmptyOrUnderutilized takes it."""
    objs = [knode("n", "m.large"), knode("big", "m.4xlarge")]
    objs += [bound(f"web-{i}", "n", cpu="100m", memory="128Mi") for i in range(3)]
    objs += [bound(f"api-{i}", "big", cpu="7", memory="28Gi") for i in range(2)]
    r = run(*objs, types=TYPES + (itype("t.small", 2, 2, price=0.09),))
    assert [a.nodes for a in r.actions] == [["n"]]
    r = run(*objs, types=TYPES + (itype("t.small", 2, 2, price=0.09),), pools=[pool(policy="Balanced")])
    assert r.actions == []
    assert "consolidationPolicy Balanced" in why(r)["n"] and "below the threshold 0.50" in why(r)["n"]


# --- the whole answer ---------------------------------------------------------------------------

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["m.large", "m.xlarge", "m.2xlarge"]),
                          st.lists(st.sampled_from(["250m", "500m", "1"]), max_size=3)), min_size=1, max_size=5))
def test_every_managed_node_is_acted_on_or_explained(layout):
    """controller.go: at most one method acts per pass; every Karpenter node is either in that
    command or explained, and the after price is the before price minus the savings."""
    objs = []
    for i, (itype_name, cpus) in enumerate(layout):
        objs.append(knode(f"n{i}", itype_name))
        objs += [bound(f"p{i}-{j}", f"n{i}", cpu=c, memory="512Mi") for j, c in enumerate(cpus)]
    r = run(*objs)
    in_actions = [n for a in r.actions for n in a.nodes]
    assert sorted(in_actions + [n for n, _ in r.blocked]) == sorted(f"n{i}" for i in range(len(layout)))
    assert len(r.actions) <= 1 and all(w for _, w in r.blocked)
    assert all(a.savings > 0 for a in r.actions)
    assert r.price_after == pytest.approx(r.price_before - sum(a.savings for a in r.actions))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "provisioner", "consolidate", *args], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_json_has_exactly_the_documented_shape():
    """The issue's interface: actions, blocked, summary (plus assumptions)."""
    out = _cli("-f", "examples/snapshots/small-cluster.yaml", "-o", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"actions", "blocked", "summary", "assumptions"}
    for a in data["actions"]:
        assert set(a) == {"kind", "reason", "nodes", "replacement", "savings_usd_hour"}
        assert a["replacement"] is None or set(a["replacement"]) == {"instance_type", "capacity_type", "zone",
                                                                     "price_usd_hour"}
    assert all(set(b) == {"node", "why"} for b in data["blocked"])
    assert set(data["summary"]) == {"price_usd_hour_before", "price_usd_hour_after"}
    assert data["actions"][0]["kind"] == "replace" and len(data["blocked"]) == 3


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    """House rule: invalid input names the file and key path, exit 2, no traceback."""
    bad = tmp_path / "pool.yaml"
    bad.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec:\n"
                   "  template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, "
                   "requirements: []}}\n  disruption: {consolidateAfter: 0s, budgets: [{nodes: lots}]}\n")
    out = _cli("-f", str(bad))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0
    assert "spec.disruption.budgets[0].nodes" in out.stderr and "pool.yaml" in out.stderr


# --- scheduled budgets and the feature gate -----------------------------------------------------

@pytest.mark.parametrize("at, active", [
    ("2026-11-23T07:59", False), ("2026-11-23T08:00", True), ("2026-11-23T17:59", True),
    ("2026-11-23T18:00", False), ("2026-11-22T09:00", False),  # a Sunday
])
def test_scheduled_budget_is_active_for_its_duration_after_each_firing(at, active):
    """pkg/apis/v1/nodepool.go Budget.IsActive: active when the schedule's next firing after
    (now - duration) is not after now (robfig/cron standard syntax, UTC)."""
    from datetime import datetime

    from provisioner.disruption.cron import is_active
    assert is_active("0 8 * * mon-fri", 10 * 3600, datetime.fromisoformat(at)) is active


def test_cron_day_fields_or_when_both_restricted_and_descriptors():
    """robfig/cron (ParseStandard, as nodepool.go uses): day-of-month and day-of-week match either
    when both are restricted; @daily and friends are accepted."""
    from datetime import datetime

    from provisioner.disruption.cron import CronError, Schedule
    s = Schedule("0 0 1 * mon")
    assert s.matches(datetime(2026, 11, 2)) and s.matches(datetime(2026, 12, 1)) and not s.matches(datetime(2026, 11, 3))
    assert Schedule("@daily").matches(datetime(2026, 1, 5, 0, 0))
    assert Schedule("*/15 9-17 * * *").matches(datetime(2026, 1, 5, 9, 45))
    with pytest.raises(CronError):
        Schedule("61 * * * *")


def test_scheduled_zero_budget_blocks_only_inside_its_window():
    """nodepool.go GetAllowedDisruptionsByReason: an inactive budget allows everything."""
    from datetime import datetime
    pools = [pool(budgets=[{"nodes": "100%"}, {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h"}])]
    inside = run(knode("e"), pools=pools, now=datetime(2026, 11, 23, 9, 0))
    outside = run(knode("e"), pools=pools, now=datetime(2026, 11, 23, 19, 0))
    assert inside.actions == [] and "schedule: '0 8 * * mon-fri', duration: 10h, active now" in why(inside)["e"]
    assert acted(outside) == [("delete", "empty", ["e"])]
    assert any("evaluated at 2026-11-23T19:00Z" in a for a in outside.assumptions)


def test_feature_gate_is_read_from_the_karpenter_deployment_or_chart_values():
    """Karpenter's chart passes featureGates as the FEATURE_GATES env of its Deployment
    (pkg/operator/options); the render holds the chart's values."""
    from provisioner.disruption.snapshot import load_snapshot
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "karpenter", "namespace": "kube-system"},
                  "spec": {"template": {"spec": {"containers": [{"name": "controller", "env": [
                      {"name": "FEATURE_GATES", "value": "ReservedCapacity=true,SpotToSpotConsolidation=true"}]}]}}}}
    snap = load_snapshot([deployment])
    assert (snap.spot_to_spot, snap.spot_to_spot_source) == (True, "Deployment karpenter's FEATURE_GATES")
    assert load_snapshot([{"settings": {"featureGates": {"spotToSpotConsolidation": False}}}]).spot_to_spot is False
    objs = (knode("n", "m.4xlarge", capacity_type="spot"), bound("web-0", "n", cpu="1", memory="2Gi"), deployment)
    r = run(*objs, pools=[pool(capacity_types=("spot",))])
    assert "needs 15 cheaper instance types" in why(r)["n"]  # the gate is on: the 15-type rule decides
    assert any("feature gate is on (read from Deployment karpenter's FEATURE_GATES)" in a for a in r.assumptions)


def test_cli_bad_schedule_exits_2(tmp_path):
    bad = tmp_path / "pool.yaml"
    bad.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec:\n"
                   "  template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, "
                   "requirements: []}}\n"
                   "  disruption: {consolidateAfter: 0s, budgets: [{nodes: '0', schedule: '0 25 * * *', duration: 1h}]}\n")
    out = _cli("-f", str(bad))
    assert out.returncode == 2 and ("spec.disruption.budgets[0].schedule: '0 25 * * *' is not a cron schedule Karpenter "
                                    "can parse: hour: '25' is outside 0-23") in out.stderr


def test_bench_prints_a_row_per_cluster_size(capsys):
    """`python -m provisioner.disruption.bench N`: the figures BENCHMARKS.md records."""
    from provisioner.disruption.bench import main
    assert main(["4"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["fill", "nodes", "pods", "seconds"]
    assert [r.split()[:2] for r in rows] == [["33%", "4"], ["90%", "4"]]


def test_candidate_pods_do_not_move_onto_nodes_inside_consolidate_after():
    """pkg/controllers/provisioning/scheduling/scheduler.go (isUnderConsolidateAfter, enforced for
    consolidation simulations): a node whose NodeClaim is not yet Consolidatable takes no pod of a
    candidate, so the candidate cannot be deleted onto it."""
    objs = [knode("big", "m.2xlarge"), knode("fresh", "m.xlarge"), bound("web-0", "big", cpu="1"),
            bound("web-1", "fresh", cpu="1"), nodeclaim("big-claim", "big")]
    settled = run(*objs, nodeclaim("fresh-claim", "fresh"), pools=[pool(after="5m")])
    assert acted(settled) == [("delete", "underutilized", ["big"])]
    busy = run(*objs, nodeclaim("fresh-claim", "fresh", consolidatable=False), pools=[pool(after="5m")])
    assert [(a.kind, a.nodes) for a in busy.actions] == [("replace", ["big"])]  # a new node instead
    assert "consolidateAfter (5m)" in why(busy)["fresh"]


_EXAMPLE = None


def _example_objects():
    global _EXAMPLE
    if _EXAMPLE is None:
        from provisioner.manifests import read_paths
        objects, _ = read_paths([str(PROJECT_DIR / "examples" / "snapshots" / "small-cluster.yaml")])
        _EXAMPLE = [item for o in objects for item in (o["items"] if o.get("kind") == "List" else [o])]
    return _EXAMPLE


_JUNK = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.lists(st.integers(), max_size=2),
                  st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2), st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_damaged_snapshot_gives_an_answer_or_an_input_error(data):
    """House rule: no input produces a traceback. Objects of the example are dropped or have a
    field replaced by junk; the result is an answer or an InputError, nothing else."""
    import copy

    from provisioner.disruption.consolidation import consolidate
    from provisioner.disruption.snapshot import load_snapshot
    from provisioner.errors import InputError
    objs = copy.deepcopy(_example_objects())
    keep = data.draw(st.lists(st.booleans(), min_size=len(objs), max_size=len(objs)))
    objs = [o for o, k in zip(objs, keep) if k]
    for _ in range(data.draw(st.integers(0, 3))):
        if not objs:
            break
        target = data.draw(st.sampled_from(objs))
        path = data.draw(st.sampled_from([("metadata", "labels"), ("metadata", "annotations"), ("spec", "disruption"),
                                          ("spec", "nodeName"), ("status", "allocatable"), ("status", "conditions"),
                                          ("spec", "selector"), ("status", "disruptionsAllowed"), ("spec", "priority"),
                                          ("metadata", "ownerReferences"), ("spec", "tolerations")]))
        parent = target.setdefault(path[0], {}) if isinstance(target.get(path[0], {}), dict) else None
        if parent is not None:
            parent[path[1]] = data.draw(_JUNK)
    try:
        result = consolidate(load_snapshot(objs))
    except InputError:
        return
    assert isinstance(result.to_dict()["summary"]["price_usd_hour_before"], float)


def test_pdbs_are_read_by_consolidation_not_reported_as_unmodelled():
    """The snapshot's PodDisruptionBudget blocks a node (pkg/utils/pdb/pdb.go), so no warning may
    call it "not modelled" (the scheduling core alone does not read PDBs)."""
    from provisioner.disruption.snapshot import load_snapshot
    from provisioner.manifests import read_paths

    objects, origins = read_paths([str(PROJECT_DIR / "examples" / "snapshots" / "small-cluster.yaml")])
    snap = load_snapshot(objects, origins)
    assert not any("PodDisruptionBudget" in w for w in snap.inputs.warnings), snap.inputs.warnings
    assert any(o.get("kind") == "PodDisruptionBudget" for o in objects)
