"""The replay runs with the automatic garbage collector off and collects itself past
engine.GC_GROWTH new objects: the collector's state is given back, and when it collects changes
nothing of the result."""
from __future__ import annotations

import gc
import json

from provisioner.replay import bench, engine
from provisioner.replay.engine import Options, replay
from provisioner.replay.trace import parse_trace


def _run() -> str:
    trace = parse_trace(bench.trace_for(100, 0.05, 7), "bench")
    return json.dumps(replay(bench.cluster(), None, trace, Options(until=0.05 * 86400)), sort_keys=True)


def test_replay_gives_the_collector_back_as_it_found_it():
    assert gc.isenabled()
    _run()
    assert gc.isenabled()
    gc.disable()
    try:
        _run()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_replay_result_does_not_depend_on_when_it_collects(monkeypatch):
    rarely = _run()
    monkeypatch.setattr(engine, "GC_GROWTH", 1_000)  # collections in the middle of the run
    assert _run() == rarely
