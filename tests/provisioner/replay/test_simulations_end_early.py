"""The replay reads only each disruption pass's command, so its consolidation simulations end as
soon as they cannot give one (disruption.simulation._Hopeless): replays come out the same as with
every simulation run to its end."""
from __future__ import annotations

import json

import pytest

from provisioner.disruption import simulation
from provisioner.replay import bench
from provisioner.replay.engine import Options, replay
from provisioner.replay.trace import parse_trace


def _run(pods: int, days: float, seed: int) -> str:
    trace = parse_trace(bench.trace_for(pods, days, max(1, int(1000 * days / 7)), seed=seed), "bench")
    return json.dumps(replay(bench.cluster(), None, trace, Options(until=days * 86400, seed=seed)), sort_keys=True)


@pytest.mark.parametrize("pods, days, seed", [(150, 0.1, 0), (400, 0.15, 3)])
def test_replay_is_the_same_with_every_simulation_run_to_its_end(monkeypatch, pods, days, seed):
    ended: list = []
    original = simulation.Simulator.run

    def spy(self, candidates, consolidation=True, ceiling=None):
        sim = original(self, candidates, consolidation, ceiling)
        ended.append(sim.abandoned)
        return sim
    monkeypatch.setattr(simulation.Simulator, "run", spy)
    early = _run(pods, days, seed)
    assert any(ended), "no simulation ended early: the comparison would prove nothing"
    monkeypatch.setattr(simulation.Simulator, "run",
                        lambda self, candidates, consolidation=True, ceiling=None: original(self, candidates, consolidation))
    assert _run(pods, days, seed) == early
