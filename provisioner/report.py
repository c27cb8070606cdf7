"""The human-readable `-o table` report (pure formatting)."""
from __future__ import annotations

import json
import math
from collections import Counter
from json.encoder import encode_basestring_ascii


from .quantity import format_common
from .result import SimulationResult

MAX_POD_NAMES = 4
MAX_OPTIONS = 3


def _table(rows: list) -> list:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _pods(names: list) -> str:
    shown = ", ".join(names[:MAX_POD_NAMES])
    return shown + (f" (+{len(names) - MAX_POD_NAMES} more)" if len(names) > MAX_POD_NAMES else "")


def _by_reason(title: str, items: list) -> list:
    """A section of pods (items with .pod and .reason) grouped by reason, in first-seen order."""
    lines = [title]
    for reason in Counter(item.reason for item in items):
        lines.append(f"  {_pods([item.pod for item in items if item.reason == reason])}")
        lines.append(f"    why: {reason}")
    return lines + [""]


def _column(nodeclaims, name: str) -> list:
    """`requests/allocatable` per NodeClaim, the whole column in one unit."""
    values = format_common(name, [m for nc in nodeclaims for m in (nc.requests.get(name, 0), nc.allocatable.get(name, 0))])
    return [f"{values[2 * i]}/{values[2 * i + 1]}" for i in range(len(nodeclaims))]


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=False)  # no output ever holds a bare Infinity or NaN (not JSON)


def _encoder():
    """json.dumps(value) for the shapes a NodeClaim line holds, without the per-call overhead of
    json.dumps: strings, lists of strings and string maps joined by hand with the C string encoder,
    repeated lists (every NodeClaim of a shape lists the same hundreds of `instance_type_options`)
    encoded once. Anything else goes to json.dumps itself, so the text is always json.dumps'."""
    dumps, string = _dumps, encode_basestring_ascii
    lists: dict = {}

    def encode(value) -> str:
        kind = type(value)
        if kind is str:
            return string(value)
        if kind is list:
            try:
                key = tuple(value)
                cached = lists.get(key)
                if cached is None:
                    cached = lists[key] = "[" + ", ".join(map(string, value)) + "]"
                return cached
            except TypeError:  # not all strings (or unhashable items): the general encoder
                return dumps(value)
        if kind is dict:
            try:
                return "{" + ", ".join([string(k) + ": " + string(v) for k, v in value.items()]) + "}"
            except TypeError:
                return dumps(value)
        if kind is int:
            return int.__repr__(value)
        if kind is float and math.isfinite(value):
            return float.__repr__(value)
        if value is True:
            return "true"
        if value is False:
            return "false"
        return dumps(value)

    def emit(item, out: list) -> None:
        """Append json.dumps(item)'s text to `out`; a long value (a shared option list) goes in
        as its own piece, so the document's 25 MB are copied once, by the final join."""
        if type(item) is not dict:
            out.append(dumps(item))
            return
        mark, pending, separator = len(out), "{", ""
        try:
            for key, value in item.items():
                text = encode(value)
                head = separator + string(key) + ": "
                separator = ", "
                if len(text) > 256:
                    out.append(pending + head)
                    out.append(text)
                    pending = ""
                else:
                    pending += head + text
        except TypeError:  # a key that is not a string
            del out[mark:]
            out.append(dumps(item))
            return
        out.append(pending + "}")

    return emit


def render_json(result: SimulationResult) -> str:
    """The `-o json` document as one string: one NodeClaim or unschedulable pod per line.

    json.dumps with `indent` falls back to the pure-Python encoder (one generator step per token,
    about 2 million at 20k pods); compact items joined by hand keep a readable layout, so the
    command writes its output in one call. Each item's text is json.dumps(item)'s (see _encoder;
    a test compares them), built without re-encoding the option lists NodeClaims share."""
    doc = result.to_dict()
    dumps, emit = _dumps, _encoder()
    out = ["{\n"]
    # Every key of to_dict(), in its order, so a field added there is never dropped here.
    for n, (key, value) in enumerate(doc.items()):
        if n:
            out.append(",\n")
        if not isinstance(value, list) or not value:
            out.append(f"  {dumps(key)}: {dumps(value)}")
            continue
        out.append(f"  {dumps(key)}: [\n    ")
        for i, item in enumerate(value):
            if i:
                out.append(",\n    ")
            emit(item, out)
        out.append("\n  ]")
    out.append("\n}\n")
    return "".join(out)


def render_table(result: SimulationResult) -> str:
    out = []
    if result.nodeclaims:
        rows: list[tuple[object, ...]] = [("#", "NODEPOOL", "INSTANCE TYPE", "CAPACITY", "ZONE", "$/HOUR", "CPU", "MEMORY",
                                           "PODS", "ALSO FITS")]
        usage = {name: _column(result.nodeclaims, name) for name in ("cpu", "memory")}
        for i, nc in enumerate(result.nodeclaims, 1):
            price = f"{nc.price_usd_hour:.4f}" + ("*" if nc.price_is_estimate else "")
            others = [o for o in nc.instance_type_options if o != nc.instance_type][:MAX_OPTIONS]
            more = len(nc.instance_type_options) - 1 - len(others)
            rows.append((i, nc.nodepool, nc.instance_type, nc.capacity_type, nc.zone, price,
                         usage["cpu"][i - 1], usage["memory"][i - 1],
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
        out.extend(_by_reason(f"Unschedulable pods ({len(result.unschedulable)}):", result.unschedulable))
    if result.ignored:
        out.extend(_by_reason(f"Ignored pods, Karpenter does not provision for them ({len(result.ignored)}):",
                              result.ignored))
    if result.rounds > 1:
        out.append(f"Provisioning rounds: {result.rounds} (NodeClaims deferred by NodePool limits launch in later rounds)")
    estimate = any(nc.price_is_estimate for nc in result.nodeclaims)
    out.append(f"Summary: {result.pods} pods, {result.scheduled} scheduled, {len(result.unschedulable)} unschedulable, "
               f"{len(result.nodeclaims)} new nodeclaims, ${result.price_usd_hour:.4f}/hour"
               + (" (* spot prices are estimates)" if estimate else ""))
    return "\n".join(out) + "\n"
