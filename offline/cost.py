"""`build/<stack>/cost.json` and the render summary's cost line: each NodePool's worst-case $/h
at its limits (provisioner.cost.ceiling), summed per team next to the team's budget."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from components.config.teams import BUDGET_ANNOTATION
from kubefacts.platform import TEAM_LABEL


def cost_report(manifests: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    from provisioner import pool_ceilings, team_totals  # the scheduler and numpy: only when costs are asked

    objects = [dict(m) for m in manifests if m.get("kind") in ("NodePool", "EC2NodeClass")]
    ceilings = sorted(pool_ceilings(objects), key=lambda c: c.nodepool)  # by name, whatever the input order
    budgets: dict[str, float] = {}
    for obj in objects:
        raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(BUDGET_ANNOTATION)
        team = ((obj.get("metadata") or {}).get("labels") or {}).get(TEAM_LABEL)
        if raw is not None and team:
            budgets[team] = float(raw)
    totals = team_totals(ceilings)
    return {
        "nodepools": [c.to_dict() for c in ceilings],
        "teams": {team: {"worst_case_usd_hour": None if total is None else round(total, 4),
                         "budget_usd_hour": budgets.get(team)} for team, total in sorted(totals.items())},
        "note": "worst case = the most Karpenter could spend within each NodePool's spec.limits "
                "(catalog on-demand prices, spot estimated); see docs/cost.md",
    }


def summary_line(report: Mapping[str, Any]) -> str:
    pools = report["nodepools"]
    known = [p["worst_case_usd_hour"] for p in pools if p["worst_case_usd_hour"] is not None]
    unbounded = len(pools) - len(known)
    teams = ", ".join(f"{team} ${t['worst_case_usd_hour']:,.2f}" + (f"/{t['budget_usd_hour']:g}" if t["budget_usd_hour"] else "")
                      for team, t in report["teams"].items() if t["worst_case_usd_hour"] is not None)
    return (f"Worst case at NodePool limits: ${sum(known):,.2f}/hour over {len(pools)} NodePools"
            + (f" ({unbounded} unbounded)" if unbounded else "") + (f"; per team (worst/budget): {teams}" if teams else ""))
