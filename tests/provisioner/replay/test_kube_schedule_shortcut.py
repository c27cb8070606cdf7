"""The kube-scheduler's binding skips the full scheduling run when no pending pod's requests fit
what any Ready node has left (Cluster._some_fit, NodeResourcesFit): that run would bind nothing,
so replays come out the same with and without the shortcut."""
from __future__ import annotations

import json

import pytest

from provisioner.replay import bench
from provisioner.replay.cluster import Cluster
from provisioner.replay.engine import Options, replay
from provisioner.replay.trace import parse_trace


def _run(pods: int, seed: int) -> str:
    trace = parse_trace(bench.trace_for(pods, 0.1, 14, seed=seed), "bench")
    return json.dumps(replay(bench.cluster(), None, trace, Options(until=0.1 * 86400, seed=seed)), sort_keys=True)


@pytest.mark.parametrize("pods, seed", [(120, 0), (300, 1)])
def test_replay_is_the_same_without_the_resource_fit_shortcut(monkeypatch, pods, seed):
    shortcut = _run(pods, seed)
    monkeypatch.setattr(Cluster, "_some_fit", lambda self, pending, nodes: True)
    assert _run(pods, seed) == shortcut


def test_both_verdicts_of_the_shortcut_occur_on_an_ordinary_trace(monkeypatch):
    trace = parse_trace(bench.trace_for(200, 0.05, 7), "bench")
    calls = []
    original = Cluster._some_fit

    def spy(self, pending, nodes):
        verdict = original(self, pending, nodes)
        calls.append(verdict)
        return verdict
    monkeypatch.setattr(Cluster, "_some_fit", spy)
    replay(bench.cluster(), None, trace, Options(until=0.05 * 86400))
    assert True in calls and False in calls
