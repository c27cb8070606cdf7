"""provisioner.api.disruption_pass: one pass of Karpenter v1.14.1's disruption controller over the
one cluster model (kubernetes-sigs/karpenter pkg/controllers/disruption/controller.go, types.go,
drift.go; pkg/controllers/state/statenode.go)."""
from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioner.api import disruption_pass, load_cluster, resolve_catalog
from provisioner.disruption.bench import cluster as bench_cluster
from provisioner.disruption.controller import consolidate, new_methods
from provisioner.disruption.pass_state import PassState
from provisioner.disruption.types import EVENTUAL, GRACEFUL, Method
from provisioner.state import Cluster, StateNode
from tests.provisioner.disruption_builders import TYPES, bound, knode, nodeclaim, pool, run
from tests.provisioner.prov_builders import ZONES, catalog, nodeclass


def drifted(name, node, since="2026-05-01T00:00:00Z"):
    claim = nodeclaim(name, node)
    claim["status"]["conditions"].append({"type": "Drifted", "status": "True", "lastTransitionTime": since})
    return claim


def cluster(*objects, pools=None):
    return load_cluster(list(pools if pools is not None else [pool()]) + [nodeclass()] + list(objects))


def run_pass(*objects, pools=None, now=None):
    return disruption_pass(cluster(*objects, pools=pools), catalog=catalog(*TYPES), now=now, zones=ZONES)


def commands(result) -> list:
    return [(c.method, c.reason, c.decision, c.candidates) for c in result.commands]


def busy_cluster():
    """Two m.xlarge nodes a quarter full: consolidation would merge them."""
    return [knode("a"), knode("b"), nodeclaim("claim-a", "a"), nodeclaim("claim-b", "b"),
            bound("web-0", "a"), bound("api-0", "b")]


def test_drift_comes_before_consolidation():
    """controller.go NewMethods: emptiness, static drift, drift, multi-node, single-node; the
    first method with a command ends the pass. A drifted node is replaced though consolidation
    could merge it."""
    objs = busy_cluster()
    objs[2] = drifted("claim-a", "a")
    result = run_pass(*objs)
    assert commands(result) == [("drift", "drifted", "delete", ["a"])]  # its pod fits on b
    assert result.commands[0].pods == ["default/web-0"]
    assert dict(result.blocked)["b"].startswith("waits for a later pass: drift acted")


def test_drift_launches_what_its_pods_need_whatever_the_price():
    """drift.go: the command's replacements are the simulation's new NodeClaims (no price rule,
    unlike consolidation.go computeConsolidation)."""
    objs = [knode("a"), knode("b"), drifted("claim-a", "a"), nodeclaim("claim-b", "b"),
            bound("web-0", "a", cpu="3"), bound("api-0", "b", cpu="3")]
    (cmd,) = run_pass(*objs).commands
    assert (cmd.method, cmd.decision, cmd.candidates) == ("drift", "replace", ["a"])
    assert [(r.nodepool, r.instance_type, r.zone) for r in cmd.replacements] == [("default", "m.xlarge", r.zone)
                                                                                 for r in cmd.replacements]
    assert cmd.savings_usd_hour == pytest.approx(0.0)


def test_emptiness_comes_before_drift():
    """controller.go NewMethods: emptiness runs first, even over a drifted node."""
    result = run_pass(*busy_cluster(), knode("idle"), drifted("claim-idle", "idle"), drifted("claim-x", "a"))
    assert commands(result) == [("emptiness", "empty", "delete", ["idle"])]


def test_without_drift_the_pass_is_consolidate():
    """The same pass as the `consolidate` command when no NodeClaim is Drifted."""
    result = run_pass(*busy_cluster())
    expected = run(*busy_cluster())
    assert [(c.method, c.decision, c.candidates) for c in result.commands] == \
        [(a.method, a.kind, a.nodes) for a in expected.actions]
    assert result.commands[0].savings_usd_hour == pytest.approx(expected.actions[0].savings)


def test_drift_takes_the_oldest_drift_first():
    """drift.go ComputeCommands: candidates sorted by the Drifted condition's lastTransitionTime."""
    objs = [knode("a"), knode("b"), drifted("claim-a", "a", "2026-05-02T00:00:00Z"),
            drifted("claim-b", "b", "2026-05-01T00:00:00Z"), bound("web-0", "a"), bound("api-0", "b")]
    assert commands(run_pass(*objs)) == [("drift", "drifted", "delete", ["b"])]


def test_drift_replaces_empty_candidates_first():
    """drift.go: candidates without reschedulable pods go before the others. (An empty node would
    go through emptiness first, so here the policy keeps emptiness away: consolidateAfter Never.)"""
    objs = [knode("a"), knode("b"), drifted("claim-a", "a", "2026-05-01T00:00:00Z"),
            drifted("claim-b", "b", "2026-05-02T00:00:00Z"), bound("web-0", "a")]
    result = run_pass(*objs, pools=[pool(after="Never")])
    assert commands(result) == [("drift", "drifted", "delete", ["b"])]
    assert result.commands[0].pods == []


def test_drift_waits_for_the_drifted_budget():
    """drift.go: a NodePool whose Drifted budget is spent skips its candidates (budgets count per
    reason, nodepool.go GetAllowedDisruptionsByReason). consolidateAfter: Never stops
    consolidation, not drift."""
    budgets = [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "100%"}]
    objs = busy_cluster()
    objs[2] = drifted("claim-a", "a")
    result = run_pass(*objs, pools=[pool(budgets=budgets, after="Never")])
    assert result.commands == []
    assert dict(result.blocked)["a"] == ("drifted, but NodePool 'default' disruption budget (nodes: '0', reasons: "
                                         "[Drifted]) allows 0 of its 2 nodes to be disrupted for Drifted")
    assert commands(run_pass(*objs, pools=[pool(after="Never")])) == [("drift", "drifted", "delete", ["a"])]


def test_a_static_nodepool_is_not_drifted_by_this_method():
    """drift.go ShouldDisrupt: !OwnedByStaticNodePool (static drift is its own method)."""
    objs = busy_cluster()
    objs[2] = drifted("claim-a", "a")
    result = run_pass(*objs, pools=[pool(replicas=2)])
    assert [c.method for c in result.commands] == []
    assert "static" in dict(result.blocked)["a"]


def test_candidates_embed_the_cluster_state_nodes():
    """types.go Candidate embeds *state.StateNode; one reader builds the cluster (state.Cluster)
    with each NodePool's disruption block, the PDBs, the Node's and the NodeClaim's conditions."""
    objs = busy_cluster()
    objs[2] = drifted("claim-a", "a", "2026-05-03T04:05:06Z")
    c = cluster(*objs)
    assert isinstance(c, Cluster) and all(isinstance(n, StateNode) for n in c.nodes)
    a = c.nodes[0]
    assert a.conditions == {"Ready": "True"} and a.claim.conditions["Drifted"] == "True"
    assert (a.name, a.ready, a.claim.name, a.claim.drifted, a.claim.consolidatable) == \
        ("a", True, "claim-a", "2026-05-03T04:05:06Z", True)
    assert [p.name for p in a.pods] == ["default/web-0"]
    assert c.pool_of(a).policy == "WhenEmptyOrUnderutilized"
    state = PassState(c, resolve_catalog(catalog(*TYPES)), "us-east-1", ZONES, 0.5, False, None)
    assert [cand.node for cand in state.candidates] == c.nodes


def test_every_method_answers_the_method_interface_in_upstream_order():
    """types.go Method: ShouldDisrupt, ComputeCommands, Reason, Class, ConsolidationType."""
    state = PassState(cluster(*busy_cluster()), resolve_catalog(catalog(*TYPES)), "us-east-1", ZONES, 0.5, False, None)
    methods = new_methods(state)
    assert all(isinstance(m, Method) for m in methods)
    assert [(m.name, m.reason(), m.disruption_class(), m.consolidation_type()) for m in methods] == [
        ("emptiness", "Empty", GRACEFUL, "empty"), ("drift", "Drifted", EVENTUAL, ""),
        ("multi-node", "Underutilized", GRACEFUL, "multi"), ("single-node", "Underutilized", GRACEFUL, "single")]


def test_a_pass_changes_nothing_and_answers_the_same_twice():
    """Pure: the replay calls it on every change and keeps the cluster."""
    objs = busy_cluster()
    objs[2] = drifted("claim-a", "a")
    c = cluster(*objs)
    before = copy.deepcopy(c)
    first = run_pass(*objs).to_dict()
    again = disruption_pass(c, catalog=catalog(*TYPES), zones=ZONES).to_dict()
    assert first == again == disruption_pass(c, catalog=catalog(*TYPES), zones=ZONES).to_dict()
    assert [(n.name, n.claim, n.meta, [p.name for p in n.pods]) for n in c.nodes] == \
        [(n.name, n.claim, n.meta, [p.name for p in n.pods]) for n in before.nodes]
    assert set(first) == {"commands", "blocked"}
    assert set(first["commands"][0]) == {"method", "reason", "decision", "candidates", "pods", "replacements",
                                         "savings_usd_hour"}


def test_now_with_a_time_zone_is_the_same_instant_in_utc():
    """budgets.go / nodepool.go Budget.IsActive: schedules are UTC; an aware `now` is converted."""
    from datetime import datetime, timedelta, timezone
    budgets = [{"nodes": "0", "schedule": "0 9 * * *", "duration": "1h"}]
    objs = busy_cluster()
    naive = run_pass(*objs, pools=[pool(budgets=budgets)], now=datetime(2026, 5, 4, 9, 30))
    aware = run_pass(*objs, pools=[pool(budgets=budgets)],
                     now=datetime(2026, 5, 4, 11, 30, tzinfo=timezone(timedelta(hours=2))))
    outside = run_pass(*objs, pools=[pool(budgets=budgets)], now=datetime(2026, 5, 4, 12, 0))
    assert naive.to_dict() == aware.to_dict() and naive.commands == []
    assert [c.reason for c in outside.commands] == ["underutilized"]


def test_a_drifted_condition_with_a_bad_time_is_a_located_error():
    """Bad input: the error names the object and the key path."""
    from provisioner.errors import InputError
    claim = drifted("claim-a", "a")
    claim["status"]["conditions"][-1]["lastTransitionTime"] = ["not", "a", "time"]
    with pytest.raises(InputError, match=r'NodeClaim "claim-a".*status\.conditions\[2\]\.lastTransitionTime'):
        cluster(knode("a"), claim)


def test_drift_may_move_pods_onto_nodes_inside_consolidate_after():
    """scheduler.go enforces consolidateAfter only for consolidation simulations
    (IsConsolidationSimulation, consolidation.go); drift.go simulates without it, so a drifted
    node's pods may go to a node whose NodeClaim is not yet Consolidatable."""
    objs = [knode("old"), knode("fresh"), drifted("claim-old", "old"),
            nodeclaim("claim-fresh", "fresh", consolidatable=False), bound("web-0", "old"), bound("api-0", "fresh")]
    result = run_pass(*objs, pools=[pool(after="5m")])
    assert commands(result) == [("drift", "drifted", "delete", ["old"])]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(1, 12), fill=st.sampled_from([0.0, 0.3, 0.9]), seed=st.integers(0, 99),
       drifts=st.lists(st.tuples(st.integers(0, 11), st.integers(1, 28)), max_size=4),
       budget=st.sampled_from(["0", "1", "50%", "100%"]))
def test_a_pass_explains_every_managed_node_once_and_drifts_only_drifted_ones(nodes, fill, seed, drifts, budget):
    """controller.go: at most one command per pass; every other Karpenter-managed node is told why
    it stays; drift.go only takes Drifted NodeClaims; without any, the pass is `consolidate`'s."""
    objs = bench_cluster(nodes, fill, seed)
    objs[1]["spec"]["disruption"]["budgets"] = [{"nodes": budget}]
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    drifted_at = {names[i % nodes]: f"2026-05-{day:02d}T00:00:00Z" for i, day in drifts}
    objs += [drifted(f"claim-{n}", n, drifted_at[n]) if n in drifted_at else nodeclaim(f"claim-{n}", n)
             for n in names]
    c = load_cluster(objs)
    result = disruption_pass(c)
    assert len(result.commands) <= 1
    acted = [n for cmd in result.commands for n in cmd.candidates]
    assert sorted(acted + [n for n, _ in result.blocked]) == sorted(names)
    for cmd in result.commands:
        if cmd.method == "drift":
            assert cmd.candidates[0] in drifted_at
    if not drifted_at:
        expected = consolidate(c)
        assert [(cmd.method, cmd.candidates) for cmd in result.commands] == \
            [(a.method, a.nodes) for a in expected.actions]
