"""The `consolidate -o table` report (pure formatting)."""
from __future__ import annotations

from .controller import ConsolidationResult


def render_table(result: ConsolidationResult) -> str:
    out = []
    if result.actions:
        out.append("Karpenter would start now:")
        for a in result.actions:
            target = ""
            if a.replacement is not None:
                r = a.replacement
                target = f" -> {r.instance_type} {r.capacity_type} {r.zone} ${r.price:.4f}/h"
            out.append(f"  {a.kind} ({a.reason}, {a.method}): {', '.join(a.nodes)}{target}, saves ${a.savings:.4f}/h")
    else:
        out.append("Karpenter would start no consolidation now.")
    out.append("")
    if result.blocked:
        width = max(len(n) for n, _ in result.blocked)
        out.append(f"Nodes left alone ({len(result.blocked)}):")
        out.extend(f"  {n.ljust(width)}  {why}" for n, why in result.blocked)
        out.append("")
    if result.assumptions:
        out.append("Assumptions:")
        out.extend(f"  - {a}" for a in result.assumptions)
        out.append("")
    out.append(f"Summary: ${result.price_before:.4f}/h before, ${result.price_after:.4f}/h after")
    return "\n".join(out) + "\n"
