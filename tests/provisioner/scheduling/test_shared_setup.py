"""A disruption pass shares the scheduler's set-up across its simulations (kubernetes-sigs/karpenter
PR #3271; pkg/controllers/disruption/helpers.go SimulateScheduling): existing nodes prepared once
(scheduling.existing), templates and domain universes built once (scheduling.shared), full nodes
skipped by one comparison (Scheduler._too_small), the cluster less the candidates taken as a view
(ExistingNodes.without). Each must plan exactly what a fresh scheduler plans on the cluster
without the candidates."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioner.disruption.bench import cluster
from provisioner.disruption.pdb import Limits
from provisioner.disruption.simulation import Simulator, marked_for_deletion
from provisioner.models import Inputs, Pod
from provisioner.planning import nodepool_instance_types, plan_pools, plan_rounds, resolve_catalog
from provisioner.result import SimulationResult
from provisioner.scheduling import scheduler as scheduler_module
from provisioner.scheduling.nodeclaim import ExistingTarget
from provisioner.state.reader import load_cluster
from provisioner.loader import load_objects
from provisioner.scheduling.preferences import initial, node_requirements
from provisioner.scheduling.shared import SharedSetup
from tests.provisioner.prov_builders import pod, req


def fresh(snap, pools, notes, names):
    """What a simulation planned before the set-up was shared: plan_pools on inputs without the
    candidates (and the nodes being deleted), their pods pending."""
    sim = Simulator(snap, pools, notes, Limits(snap.pdbs))
    deleting = {n.name for n in snap.nodes if marked_for_deletion(n)}
    gone = set(names) | deleting
    base = snap.inputs
    moved = sim._movable(set(names), sim.under_consolidate_after) + sim._movable(deleting - set(names))
    inputs = Inputs(nodepools=base.nodepools, nodeclasses=base.nodeclasses, pods=list(base.pods) + moved,
                    bound_pods=[p for p in base.bound_pods if p.node_name not in gone], daemonsets=base.daemonsets,
                    nodes=[n for n in base.nodes if n.name not in gone], overlays=base.overlays,
                    namespaces=base.namespaces)
    result = plan_pools(inputs, pools, notes)
    return ([(c.nodepool, c.instance_type, c.zone, sorted(c.pods)) for c in result.nodeclaims],
            sorted((k, sorted(v)) for k, v in result.existing.items()), sorted((u.pod, u.reason) for u in result.unschedulable))


def shared(sim, names):
    base = sim.snap.inputs
    moved = sim._movable(set(names), sim.under_consolidate_after) + sim._movable(sim.deleting - set(names))
    pending = list(base.pods) + moved
    result = plan_rounds(SimulationResult(pods=len(pending)), sim.existing.without(names), pending, sim.pools,
                         base.daemonsets, sim.notes, sim.shared)
    return ([(c.nodepool, c.instance_type, c.zone, sorted(c.pods)) for c in result.nodeclaims],
            sorted((k, sorted(v)) for k, v in result.existing.items()), sorted((u.pod, u.reason) for u in result.unschedulable))


# cel-python raises the recursion limit when it first compiles a rule: do that before hypothesis runs.
load_cluster(cluster(2, 0.5, 0))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(2, 48), fill=st.sampled_from([0.2, 0.5, 0.9]), seed=st.integers(0, 50),
       picks=st.lists(st.integers(0, 47), min_size=1, max_size=4))
def test_shared_set_up_plans_what_a_fresh_scheduler_plans(nodes, fill, seed, picks):
    snap = load_cluster(cluster(nodes, fill, seed))
    pools, notes = nodepool_instance_types(snap.inputs, resolve_catalog(None), "us-east-1",
                                           ("us-east-1a", "us-east-1b", "us-east-1c"), 0.579)
    sim = Simulator(snap, pools, notes, Limits(snap.pdbs))
    names = sorted({snap.nodes[i % nodes].name for i in picks})
    for _ in range(2):  # the second run reuses what the first built
        assert shared(sim, names) == fresh(snap, pools, notes, names)


def _last_node_free():
    """40 nodes 90 % full but the last, emptied onto the first; three pods to place."""
    objs = cluster(40, 0.9, 1)
    for o in objs:  # free the last node
        if o["kind"] == "Pod" and o["spec"]["nodeName"] == "node-0039":
            o["spec"]["nodeName"] = "node-0000"
    snap = load_cluster(objs)
    pools, notes = nodepool_instance_types(snap.inputs, resolve_catalog(None), "us-east-1",
                                           ("us-east-1a", "us-east-1b", "us-east-1c"), 0.579)
    pending = [Pod(f"default/new-{i}", replace(snap.inputs.bound_pods[0].spec)) for i in range(3)]
    return snap, pools, notes, pending


def test_full_nodes_are_skipped_without_changing_where_pods_land(monkeypatch):
    """Only the last of 40 nodes has room: the pods land there whether the full ones are skipped
    by the start-of-run comparison or each rejects them."""
    snap, pools, notes, pending = _last_node_free()
    skipped = plan_pools(replace(snap.inputs, pods=pending), pools, notes)
    monkeypatch.setattr(scheduler_module, "_SKIP_MIN_NODES", 10**9)
    proposed = plan_pools(replace(snap.inputs, pods=pending), pools, notes)
    assert skipped.existing == proposed.existing == {"node-0039": [p.name for p in pending]}


def test_full_nodes_are_skipped_without_a_proposal(monkeypatch):
    """The start-of-run comparison's skip pointers reach Variant.next_alive: of 40 nodes only the
    one with room is proposed to (the pointers were once built as a dict the skip array ignored)."""
    snap, pools, notes, pending = _last_node_free()
    proposed_to = []
    propose = ExistingTarget.propose

    def recording(self, variant, k, topology):
        proposed_to.append(self.name)
        return propose(self, variant, k, topology)

    monkeypatch.setattr(ExistingTarget, "propose", recording)
    result = plan_pools(replace(snap.inputs, pods=pending), pools, notes)
    assert result.existing == {"node-0039": [p.name for p in pending]}
    assert set(proposed_to) == {"node-0039"}


@given(st.lists(st.booleans(), max_size=40), st.data())
def test_skip_runs_lead_next_alive_to_the_first_target_with_room(bad, data):
    """Variant.next_alive over skip_runs' pointers answers the first index at or after i outside
    every run of full targets, however the runs lie."""
    import numpy as np

    from provisioner.scheduling.preferences import Variant, skip_runs
    edges = np.diff(np.concatenate(([0], np.asarray(bad, dtype=np.int8), [0])))
    variant = Variant.__new__(Variant)
    variant.dead = skip_runs(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist())
    for i in data.draw(st.lists(st.integers(0, len(bad) + 2), max_size=10)):
        assert variant.next_alive(i) == next((j for j in range(i, len(bad)) if not bad[j]), max(i, len(bad)))


def test_a_specs_first_level_is_made_once_per_pass_and_equals_a_fresh_one():
    spec = load_objects([pod("p", node_selector={"disk": "ssd"}, required=[[req("zone", "In", "a", "b")]],
                             preferred=[(10, [req("zone", "In", "a")])])]).pods[0].spec
    shared = SharedSetup()
    constraints, (strict, requirements) = shared.first_level(spec)
    assert shared.first_level(spec)[1][0] is strict  # made once
    fresh_strict, fresh_requirements = node_requirements(spec, initial(spec))
    assert constraints == initial(spec)
    assert strict.canonical() == fresh_strict.canonical() and requirements.canonical() == fresh_requirements.canonical()
    assert requirements.canonical() != strict.canonical()  # the preferred zone narrows the requirements only
    assert shared.canonical(requirements) == requirements.canonical()


def test_a_shapes_nodepool_answers_are_shared_only_with_the_same_templates():
    """SharedSetup.statics: the runs of a pass share a shape's per-NodePool answers; a template
    made anew (another object, even at the same place) starts from none."""
    setup = SharedSetup()
    first, other = object(), object()
    taints, statics = setup.statics(("reqs", (), (1000,), ("cpu",)), [first])
    statics[0] = "answer"
    assert setup.statics(("reqs", (), (1000,), ("cpu",)), [first]) == (taints, {0: "answer"})
    assert setup.statics(("reqs", (), (1000,), ("cpu",)), [other]) == ({}, {})
    assert setup.statics(("reqs", (), (2000,), ("cpu",)), [first]) == ({}, {})
