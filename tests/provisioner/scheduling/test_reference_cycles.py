"""A scheduling run is freed by reference counting alone: no reference cycle (a Topology holding a
bound method of its Scheduler, a Variant and its Signature referring to each other) leaves its
objects to the garbage collector, which the replay runs without (provisioner.replay.engine)."""
from __future__ import annotations

import gc

from provisioner.disruption.bench import cluster
from provisioner.disruption.pdb import Limits
from provisioner.disruption.simulation import Simulator
from provisioner.planning import nodepool_instance_types, resolve_catalog
from provisioner.scheduling.scheduler import schedule
from provisioner.state.reader import load_cluster


def _collected_after(run) -> int:
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        run()
        return gc.collect()
    finally:
        if enabled:
            gc.enable()


def test_consolidation_simulations_leave_no_reference_cycles():
    snap = load_cluster(cluster(16, 0.6, 4))
    pools, notes = nodepool_instance_types(snap.inputs, resolve_catalog(None), "us-east-1",
                                           ("us-east-1a", "us-east-1b", "us-east-1c"), 0.579)
    sim = Simulator(snap, pools, notes, Limits(snap.pdbs))
    names = [n.name for n in snap.nodes]
    sim.run([c for c in snap.nodes if c.name == names[0]])  # caches that live as long as the pass
    results = []
    assert _collected_after(lambda: [results.append(sim.run([n])) for n in snap.nodes[1:]]) == 0
    assert results and all(r is not None for r in results)


def test_a_scheduling_run_leaves_no_reference_cycles():
    snap = load_cluster(cluster(4, 0.5, 1))
    pools, _ = nodepool_instance_types(snap.inputs, resolve_catalog(None), "us-east-1",
                                       ("us-east-1a", "us-east-1b", "us-east-1c"), 0.579)
    pods = list(snap.inputs.bound_pods)
    planned = []
    assert _collected_after(lambda: planned.append(schedule(pods, pools))) == 0
    assert planned[0].nodeclaims
