"""A replay's consolidation simulation is taken from an earlier pass when it would come out the
same (provisioner/disruption/simulation_reuse.py): the same candidates' pods, pending pods,
NodePools and price, and every node changed since with room for none of the run's pods, then and
now. Replays come out the same as with every simulation run."""
from __future__ import annotations

import json

import pytest

from provisioner.disruption import simulation_reuse
from provisioner.replay import bench
from provisioner.replay.engine import Options, replay
from provisioner.replay.trace import parse_trace


def _run(pods: int, days: float, seed: int) -> str:
    trace = parse_trace(bench.trace_for(pods, days, max(1, int(1000 * days / 7)), seed=seed), "bench")
    return json.dumps(replay(bench.cluster(), None, trace, Options(until=days * 86400, seed=seed)), sort_keys=True)


@pytest.mark.parametrize("pods, days, seed", [(300, 0.2, 0), (600, 0.2, 4)])
def test_replay_is_the_same_with_every_simulation_run(monkeypatch, pods, days, seed):
    taken = []
    original = simulation_reuse.Reuse.recall

    def spy(self):
        kept = original(self)
        taken.append(kept is not None)
        return kept
    monkeypatch.setattr(simulation_reuse.Reuse, "recall", spy)
    reused = _run(pods, days, seed)
    assert any(taken), "no simulation was taken from an earlier pass: the comparison would prove nothing"
    monkeypatch.setattr(simulation_reuse.Reuse, "recall", lambda self: None)
    assert _run(pods, days, seed) == reused


def test_a_node_with_room_for_a_pod_of_the_run_is_a_change():
    left = {"cpu": 1000, "memory": 2**30, "pods": 10_000}
    assert simulation_reuse._room(left, True, [{"cpu": 500, "pods": 1000}])
    assert not simulation_reuse._room(left, True, [{"cpu": 1500, "pods": 1000}])
    assert not simulation_reuse._room(left, False, [{"cpu": 500, "pods": 1000}])  # a node over its allocatable
    assert not simulation_reuse._room(left, True, [{"nvidia.com/gpu": 1}])  # a resource it does not have
