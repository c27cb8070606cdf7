"""The disruption passes of one replay share a PassMemo (provisioner/disruption/pass_memo.py): the
facts derived from nodes and pods that did not change are reused, and no answer changes. Without
PDBs only: with them, a pod's reschedulability depends on their status too (pkg/utils/pdb/pdb.go)."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from provisioner.disruption import controller, pass_state
from provisioner.planning import resolve_catalog
from provisioner.replay import pass_cache
from provisioner.replay import bench
from provisioner.replay.disruption import PassCache
from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace
from tests.provisioner.replay.test_pass_cache import CHANGES, _afresh, _inputs, _world, change_cluster


def _replay(pods: int, days: float, seed: int, memo: bool, pdb: bool = False) -> str:
    doc = bench.trace_for(pods, days, max(1, int(1000 * days / 7)), seed=seed)
    if pdb:
        doc["events"].insert(0, {"at": "0s", "apply": {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "svc", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "svc-00"}}}}})
    r = Replay(bench.cluster(), None, parse_trace(doc, "bench"), Options(until=days * 86400, seed=seed))
    cache = PassCache()
    if not memo:
        cache.memo = None  # type: ignore[assignment]
    r.pass_cache = cache
    return json.dumps(r.run(), sort_keys=True)


@pytest.mark.parametrize("pods, days, seed, pdb", [(150, 0.1, 0, False), (400, 0.15, 2, False), (300, 0.15, 1, True)])
def test_replay_is_the_same_without_the_memo(monkeypatch, pods, days, seed, pdb):
    asked, made = [], []
    ask, make = pass_state.PassState._pod_facts, pass_state.pod_facts
    monkeypatch.setattr(pass_state.PassState, "_pod_facts", lambda *a: asked.append(1) or ask(*a))
    monkeypatch.setattr(pass_state, "pod_facts", lambda *a: made.append(1) or make(*a))
    with_memo = _replay(pods, days, seed, memo=True, pdb=pdb)
    assert (len(asked) > len(made)) != pdb  # with a PDB the pod facts are not kept
    assert json.loads(with_memo)["disruptions"]
    assert _replay(pods, days, seed, memo=False, pdb=pdb) == with_memo


def _movable(state):
    """Each candidate's movable pods, kept off the nodes inside consolidateAfter and off none."""
    sim = state.simulator
    return {(c.name, bool(avoid)): [(p.name, p.spec.key) for p in sim._movable([c.name], avoid)]
            for c in state.candidates for avoid in (sim.under_consolidate_after, frozenset())}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHANGES, st.booleans())
def test_passes_over_the_kept_groups_with_a_memo_answer_as_passes_read_afresh(changes, with_pdb):
    """Over any series of changes to a replayed cluster, a pass over the pass cache's state (its
    pods kept grouped, state.cluster.NodePods) with the PassMemo kept across passes gives the
    command, the eligible counts and every candidate's movable pods of a pass over load_cluster's
    read of all the objects without a memo."""
    r = _world(with_pdb)
    cache, now, drifted = PassCache(skip=False), 600.0, set()
    for change, i, j in [("time", 0, 0)] + changes:
        now = change_cluster(r, change, i, j, now, drifted)
        view = pass_cache.pass_view(r.cluster, *_inputs(r, now, drifted), cache)
        kept = view.state()
        wall, _, fresh = _afresh(r, now, drifted)
        assert kept.node_pods is not None and fresh.node_pods is None
        args = (r.catalog, wall)
        options = {"region": r.o.region, "zones": tuple(r.o.zones), "spot_discount": r.o.spot_discount,
                   "spot_to_spot": r.o.spot_to_spot, "explain": False}
        with_memo = controller.disruption_pass(kept, *args, **options, memo=cache.memo)
        afresh = controller.disruption_pass(fresh, *args, **options)
        assert with_memo.to_dict() == afresh.to_dict() and with_memo.eligible == afresh.eligible
        states = [pass_state.PassState(s, resolve_catalog(r.catalog), r.o.region, r.o.zones, r.o.spot_discount,
                                       r.o.spot_to_spot, wall, False, memo) for s, memo in ((kept, cache.memo), (fresh, None))]
        assert _movable(states[0]) == _movable(states[1])


def test_instance_types_by_name_are_kept_only_while_the_list_holds_the_same_objects():
    from provisioner.disruption.pass_memo import PassMemo
    from tests.provisioner.prov_builders import fake_type
    types = [fake_type("a.large", "2", "4Gi"), fake_type("b.large", "2", "8Gi")]
    memo = PassMemo()
    first = pass_state._by_name(types, memo)
    assert first == {"a.large": types[0], "b.large": types[1]}
    assert pass_state._by_name(types, memo) is first
    types[1] = fake_type("b.large", "4", "8Gi")  # changed in place: the same list object
    again = pass_state._by_name(types, memo)
    assert again == {"a.large": types[0], "b.large": types[1]} and again is not first
