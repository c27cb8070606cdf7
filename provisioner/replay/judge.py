"""Judging NodePool changes over a trace (`tune --replay`, the pr-report's trace section): replay
the baseline and each candidate, keep what lowers the replayed cost without raising evictions or
the pending p95. The replays are independent, so they run on local worker processes."""
from __future__ import annotations

import copy

from ..cost.tune import replace_requirements
from .engine import Options
from .parallel import replay_all
from .trace import Trace

EPSILON = 1e-6


def with_changes(objects: list, changes: list) -> list:
    """The objects with each change's requirements replacing its NodePool's (by key)."""
    by_pool = {c["nodepool"]: c["requirements"] for c in changes}
    out = []
    for obj in objects:
        if (isinstance(obj, dict) and obj.get("kind") == "NodePool"
                and (obj.get("metadata") or {}).get("name") in by_pool):
            obj = copy.deepcopy(obj)
            tspec = obj.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
            tspec["requirements"] = replace_requirements(list(tspec.get("requirements") or []),
                                                         by_pool[obj["metadata"]["name"]])
        out.append(obj)
    return out


def figures(result: dict) -> dict:
    s = result["summary"]
    return {"cost_usd": s["cost_usd"], "node_hours": s["node_hours"], "pods_evicted": s["pods_evicted"],
            "pending_p95_s": s["pending_seconds"]["p95"]}


def verdict(base: dict, other: dict) -> tuple[bool, str]:
    """Accepted when cheaper over the trace with no more evictions and no higher pending p95."""
    if other["cost_usd"] >= base["cost_usd"] - EPSILON:
        return False, f"not cheaper over the trace (${other['cost_usd']:.2f} vs ${base['cost_usd']:.2f})"
    if other["pods_evicted"] > base["pods_evicted"]:
        return False, f"raises evictions ({other['pods_evicted']} vs {base['pods_evicted']})"
    if other["pending_p95_s"] > base["pending_p95_s"] + EPSILON:
        return False, f"raises the pending p95 ({other['pending_p95_s']:g} s vs {base['pending_p95_s']:g} s)"
    return True, f"saves ${base['cost_usd'] - other['cost_usd']:.2f} over the trace"


def judge(objects: list, origins: list, trace: Trace, options: Options, changes: list, workers: int | None = None,
          scheduler: str | None = None) -> dict:
    """{"baseline": figures, "candidates": [{nodepool, requirements, figures, accepted, why}],
    "accepted": [changes], "tuned": figures of the accepted changes together}."""
    jobs = [(objects, origins, trace, options)]
    jobs += [(with_changes(objects, [c]), origins, trace, options) for c in changes]
    results = replay_all(jobs, workers, scheduler)
    base = figures(results[0])
    candidates, accepted = [], []
    for change, result in zip(changes, results[1:]):
        f = figures(result)
        ok, why = verdict(base, f)
        candidates.append({**change, "replay": f, "accepted": ok, "why": why})
        if ok:
            accepted.append(change)
    tuned = base
    if len(accepted) > 1:  # together they may interact: keep them only if the whole still passes
        together = figures(replay_all([(with_changes(objects, accepted), origins, trace, options)], 1, scheduler)[0])
        ok, _ = verdict(base, together)
        if ok:
            tuned = together
        else:
            best = min((c for c in candidates if c["accepted"]), key=lambda c: c["replay"]["cost_usd"])
            accepted = [{"nodepool": best["nodepool"], "requirements": best["requirements"]}]
            tuned = best["replay"]
    elif accepted:
        tuned = candidates[[c["accepted"] for c in candidates].index(True)]["replay"]
    return {"baseline": base, "candidates": candidates, "accepted": accepted, "tuned": tuned}


def before_after(before: tuple, after: tuple, trace: Trace, options: Options,
                 workers: int | None = None) -> tuple[dict, dict]:
    """Figures (with evictions by reason) of the same trace over two sets of (objects, origins):
    what the pull-request report shows "over the trace"."""
    results = replay_all([(before[0], before[1], trace, options), (after[0], after[1], trace, options)], workers)
    out = []
    for result in results:
        f = figures(result)
        f["nodes_launched"] = result["summary"]["nodes_launched"]
        f["evictions_by_reason"] = {}
        for d in result["disruptions"]:
            f["evictions_by_reason"][d["reason"]] = f["evictions_by_reason"].get(d["reason"], 0) + d["pods_evicted"]
        out.append(f)
    return out[0], out[1]
