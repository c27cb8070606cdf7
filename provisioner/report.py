"""The human-readable `-o table` report (pure formatting)."""
from __future__ import annotations

import json
from collections import Counter

from .quantity import format_quantity
from .result import SimulationResult

MAX_POD_NAMES = 4
MAX_OPTIONS = 3


def _table(rows: list) -> list:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _pods(names: list) -> str:
    shown = ", ".join(names[:MAX_POD_NAMES])
    return shown + (f" (+{len(names) - MAX_POD_NAMES} more)" if len(names) > MAX_POD_NAMES else "")


def _usage(requests: dict, allocatable: dict, name: str) -> str:
    return f"{format_quantity(name, requests.get(name, 0))}/{format_quantity(name, allocatable.get(name, 0))}"


def render_json(result: SimulationResult) -> str:
    """The `-o json` document as one string: one NodeClaim or unschedulable pod per line.

    json.dumps with `indent` falls back to the pure-Python encoder (one generator step per token,
    about 2 million at 20k pods); compact items joined by hand keep the C encoder and a readable
    layout, so the command writes its output in one call."""
    doc = result.to_dict()
    dumps = json.dumps

    def member(key: str, value) -> str:
        if not isinstance(value, list) or not value:
            return f"  {dumps(key)}: {dumps(value)}"
        return f"  {dumps(key)}: [\n    " + ",\n    ".join(map(dumps, value)) + "\n  ]"

    # Every key of to_dict(), in its order, so a field added there is never dropped here.
    return "{\n" + ",\n".join(member(key, value) for key, value in doc.items()) + "\n}\n"


def render_table(result: SimulationResult) -> str:
    out = []
    if result.nodeclaims:
        rows = [("#", "NODEPOOL", "INSTANCE TYPE", "CAPACITY", "ZONE", "$/HOUR", "CPU", "MEMORY", "PODS", "ALSO FITS")]
        for i, nc in enumerate(result.nodeclaims, 1):
            price = f"{nc.price_usd_hour:.4f}" + ("*" if nc.price_is_estimate else "")
            others = [o for o in nc.instance_type_options if o != nc.instance_type][:MAX_OPTIONS]
            more = len(nc.instance_type_options) - 1 - len(others)
            rows.append((i, nc.nodepool, nc.instance_type, nc.capacity_type, nc.zone, price,
                         _usage(nc.requests, nc.allocatable, "cpu"), _usage(nc.requests, nc.allocatable, "memory"),
                         len(nc.pods), ", ".join(others) + (f" (+{more})" if more > 0 else "")))
        out.append(f"NodeClaims to launch ({len(result.nodeclaims)}):")
        out.extend("  " + line for line in _table(rows))
        out.append("")
        out.append("Pods per NodeClaim:")
        for i, nc in enumerate(result.nodeclaims, 1):
            out.append(f"  {i}. {_pods(nc.pods)}")
        out.append("")
    else:
        out.append("No new NodeClaims.")
        out.append("")
    if result.existing:
        out.append("Pods placed on existing nodes:")
        for node, pods in result.existing.items():
            out.append(f"  {node}: {_pods(pods)}")
        out.append("")
    if result.unschedulable:
        out.append(f"Unschedulable pods ({len(result.unschedulable)}):")
        by_reason = Counter(u.reason for u in result.unschedulable)
        for reason, count in by_reason.items():
            names = [u.pod for u in result.unschedulable if u.reason == reason]
            out.append(f"  {_pods(names)}")
            out.append(f"    why: {reason}")
        out.append("")
    if result.ignored:
        out.append(f"Ignored pods, Karpenter does not provision for them ({len(result.ignored)}):")
        by_reason = Counter(i.reason for i in result.ignored)
        for reason in by_reason:
            out.append(f"  {_pods([i.pod for i in result.ignored if i.reason == reason])}")
            out.append(f"    why: {reason}")
        out.append("")
    if result.rounds > 1:
        out.append(f"Provisioning rounds: {result.rounds} (NodeClaims deferred by NodePool limits launch in later rounds)")
    estimate = any(nc.price_is_estimate for nc in result.nodeclaims)
    out.append(f"Summary: {result.pods} pods, {result.scheduled} scheduled, {len(result.unschedulable)} unschedulable, "
               f"{len(result.nodeclaims)} new nodeclaims, ${result.price_usd_hour:.4f}/hour"
               + (" (* spot prices are estimates)" if estimate else ""))
    return "\n".join(out) + "\n"
