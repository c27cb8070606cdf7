"""The disruption passes of one replay share a PassMemo (provisioner/disruption/pass_memo.py): the
facts derived from nodes and pods that did not change are reused, and no answer changes. Without
PDBs only: with them, a pod's reschedulability depends on their status too (pkg/utils/pdb/pdb.go)."""
from __future__ import annotations

import json

import pytest

from provisioner.disruption import pass_state
from provisioner.replay import bench
from provisioner.replay.disruption import PassCache
from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace


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
    reused = []
    original = pass_state.same

    def spy(a, b):
        hit = original(a, b)
        reused.append(hit)
        return hit
    monkeypatch.setattr(pass_state, "same", spy)
    with_memo = _replay(pods, days, seed, memo=True, pdb=pdb)
    assert (True in reused) != pdb  # with a PDB the pod facts are not kept
    assert json.loads(with_memo)["disruptions"]
    assert _replay(pods, days, seed, memo=False, pdb=pdb) == with_memo
