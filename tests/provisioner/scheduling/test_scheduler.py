"""The scheduler's per-run set-up (scheduling/scheduler.py, pkg/controllers/provisioning/scheduling/
scheduler.go NewScheduler and queue.go): the queue order by signature, first variants made when
their pods are first placed unless they own topology groups, and full nodes skipped by a
comparison shared between a disruption pass's simulations (ExistingNodes.too_small)."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner import catalog_from_dict, load_objects
from provisioner.api import nodepool_instance_types, plan_pools
from provisioner.scheduling import scheduler as scheduler_module
from provisioner.scheduling.existing import ExistingNodes, PreparedNode
from provisioner.scheduling.nodeclaim import ExistingTarget
from provisioner.scheduling.preferences import Variant, skip_flagged, skip_runs
from tests.provisioner.prov_builders import (DEFAULT_TYPES, ZONES, catalog, daemonset, deployment, node, nodeclass,
                                             nodepool, pod, spread, term)


def plan(inputs):
    pools, notes = nodepool_instance_types(inputs, catalog_from_dict(catalog(*DEFAULT_TYPES)), "test-region", ZONES, 0.5)
    result = plan_pools(inputs, pools, notes)
    return ([(nc.nodepool, nc.instance_type, nc.zone, nc.pods) for nc in result.nodeclaims],
            sorted((u.pod, u.reason) for u in result.unschedulable), result.existing)


def mixed(seed):
    """Deployments of random sizes, some with zonal spread or hostname anti-affinity, and loose
    pods of equal size from two specs interleaved in the order given, beside two existing nodes."""
    rng = random.Random(seed)
    objs = [nodeclass(), nodepool("general"), daemonset(cpu="100m", memory="128Mi"),
            node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": "20"}),
            node("n2", allocatable={"cpu": "2", "memory": "4Gi", "pods": "20"})]
    for i in range(6):
        extra = {}
        roll = rng.random()
        if roll < 0.25:
            extra = {"spread": [spread("topology.kubernetes.io/zone", labels={"app": f"d{i}"})]}
        elif roll < 0.4:
            extra = {"anti_affinity": [term("kubernetes.io/hostname", labels={"app": f"d{i}"})]}
        objs.append(deployment(f"d{i}", replicas=rng.randint(1, 12), labels={"app": f"d{i}"},
                               cpu=rng.choice(["250m", "500m", "1", "2"]), memory=rng.choice(["256Mi", "1Gi", "2Gi"]),
                               **extra))
    for i in range(8):  # equal requests, two specs (labels differ), alternating in the input
        objs.append(pod(f"loose-{i}", labels={"team": "ab"[i % 2]}, cpu="500m", memory="1Gi"))
    return objs


# cel-python raises the recursion limit when it first compiles a rule: do that before hypothesis runs.
load_objects(mixed(0))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_first_variants_made_on_first_placement_plan_as_when_all_are_made_up_front(seed):
    inputs = load_objects(mixed(seed))
    lazy = plan(inputs)
    has_topology = scheduler_module._has_topology
    scheduler_module._has_topology = lambda spec: True  # every first variant up front, as before
    try:
        eager = plan(inputs)
    finally:
        scheduler_module._has_topology = has_topology
    assert eager == lazy


def test_pods_of_equal_size_queue_by_their_specs_first_appearance_then_in_order(monkeypatch):
    """queue.go sorts by CPU, then memory; equal pods keep the order given (Go's sort is not stable,
    Karpenter's queue is, by creation): interleaved specs A, B, A, B are placed A, A, B, B."""
    placed = []
    commit = ExistingTarget.commit

    def recording(self, variant, proposal, pods, topology):
        placed.extend(p.name for p in pods)
        return commit(self, variant, proposal, pods, topology)

    monkeypatch.setattr(ExistingTarget, "commit", recording)
    objs = [nodeclass(), nodepool("general"), node("n1", allocatable={"cpu": "8", "memory": "16Gi", "pods": "20"}),
            pod("a1", labels={"s": "a"}, cpu="1"), pod("b1", labels={"s": "b"}, cpu="1"),
            pod("a2", labels={"s": "a"}, cpu="1"), pod("big", cpu="2"), pod("b2", labels={"s": "b"}, cpu="1")]
    plan(load_objects(objs))
    assert placed == ["default/big", "default/a1", "default/a2", "default/b1", "default/b2"]


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 8), st.booleans()), min_size=1, max_size=40),
       request=st.tuples(st.integers(0, 4000), st.integers(0, 8)), data=st.data())
def test_a_views_too_small_is_its_bases_less_the_removed_nodes(rows, request, data):
    """ExistingNodes.too_small of `without(names)` equals the comparison made on those nodes afresh."""
    prepared = []
    for i, (cpu, gib, schedulable) in enumerate(rows):
        prep = PreparedNode.__new__(PreparedNode)
        prep.node = type("N", (), {"name": f"n{i:02d}", "labels": {}})()
        prep.available, prep.schedulable = {"cpu": cpu, "memory": gib << 30}, schedulable
        prep.sort_key, prep._vector = (False, f"n{i:02d}"), (None, [])
        prepared.append(prep)
    dims = ("cpu", "memory")
    need = (request[0], request[1] << 30)
    base = ExistingNodes(prepared)
    base.too_small(dims, need)  # the base answers first, as in a pass
    names = data.draw(st.sets(st.sampled_from([p.node.name for p in prepared])))
    view = base.without(names)
    expected = [not (p.schedulable and p.available["cpu"] >= need[0] and p.available["memory"] >= need[1])
                for p in prepared if p.node.name not in names]
    assert view.too_small(dims, need) == expected
    assert ExistingNodes([p for p in prepared if p.node.name not in names]).too_small(dims, need) == expected


@given(st.lists(st.booleans(), max_size=40), st.data())
def test_skip_flagged_skips_exactly_the_flagged_targets(bad, data):
    """preferences.skip_flagged: next_alive from i answers the first unflagged index >= i, and the
    pointers are skip_runs' over the flagged runs."""
    variant = Variant.__new__(Variant)
    edges = np.diff(np.concatenate(([0], np.asarray(bad, dtype=np.int8), [0])))
    variant.dead = skip_flagged(bad)
    assert variant.dead == skip_runs(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist())
    i = data.draw(st.integers(0, len(bad)))
    expected = next((j for j in range(i, len(bad)) if not bad[j]), len(bad))
    assert variant.next_alive(i) == expected
