"""Rendering a replay result: the table, the side-by-side comparison (`--compare`), and one
self-contained HTML page with plotly figures (plotly.js inlined: nothing is fetched at view time)."""
from __future__ import annotations

import html
import json

REASONS = ("empty", "underutilized", "drifted", "expired", "interrupted")


def comparison(results: list) -> list:
    """One row per replay: cost, node hours, evictions by reason, pending p95."""
    rows = []
    for label, result in results:
        s = result["summary"]
        by_reason = dict.fromkeys(REASONS, 0)
        for d in result["disruptions"]:
            by_reason[d["reason"]] += d["pods_evicted"]
        rows.append({"label": label, "cost_usd": s["cost_usd"], "node_hours": s["node_hours"],
                     "pods_evicted": s["pods_evicted"], "evictions_by_reason": by_reason,
                     "pending_p95_s": s["pending_seconds"]["p95"]})
    return rows


def render_json(result: dict, compare: list | None = None) -> str:
    out = dict(result)
    if compare:
        out["compare"] = comparison(compare)
    return json.dumps(out, indent=2) + "\n"


def _table(rows: list) -> list:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def render_table(result: dict, compare: list | None = None) -> str:
    s = result["summary"]
    p = s["pending_seconds"]
    lines = [f"Replayed {s['duration_s'] / 3600:g} h: ${s['cost_usd']:.2f}, {s['node_hours']:.1f} node hours, "
             f"{s['nodes_launched']} nodes launched, {s['nodes_terminated']} terminated, {s['pods_evicted']} pods evicted",
             f"Pending seconds: p50 {p['p50']:g}, p95 {p['p95']:g}, max {p['max']:g}", ""]
    rows: list[tuple[str, ...]] = [("NODEPOOL", "COST_USD", "NODE_HOURS", "LAUNCHED")]
    rows += [(b["nodepool"], f"{b['cost_usd']:.2f}", f"{b['node_hours']:.1f}", str(b["nodes_launched"]))
             for b in result["by_nodepool"]]
    lines += _table(rows) + [""]
    if result["disruptions"]:
        rows = [("TIME", "REASON", "NODES", "REPLACEMENTS", "EVICTED")]
        rows += [(_clock(d["time_s"]), d["reason"], ",".join(d["nodes"]), ",".join(d["replacements"]) or "-",
                  str(d["pods_evicted"])) for d in result["disruptions"]]
        lines += _table(rows)
    else:
        lines.append("No disruptions.")
    if compare:
        lines += ["", "Comparison:"]
        rows = [("SET", "COST_USD", "NODE_HOURS", "EVICTED") + tuple(r.upper() for r in REASONS) + ("PENDING_P95_S",)]
        for r in comparison(compare):
            rows.append((r["label"], f"{r['cost_usd']:.2f}", f"{r['node_hours']:.1f}", str(r["pods_evicted"]))
                        + tuple(str(r["evictions_by_reason"][k]) for k in REASONS) + (f"{r['pending_p95_s']:g}",))
        lines += _table(rows)
    return "\n".join(lines) + "\n"


def _clock(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}d{h:02d}:{m:02d}:{s:02d}"


def _step(timeline: list, key: str, until: float) -> tuple:
    xs, ys = [], []
    for e in timeline:
        xs.append(e["time_s"] / 3600)
        ys.append(e[key])
    if timeline:
        xs.append(until / 3600)
        ys.append(timeline[-1][key])
    return xs, ys


def render_html(result: dict, compare: list | None = None, title: str = "Karpenter replay") -> str:
    """One page, plotly.js inline: cost and nodes over time, pending pods, disruptions on a
    timeline, the per-pool breakdown (and the comparison when given)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    until = result["summary"]["duration_s"]
    runs = compare or [("replay", result)]
    fig = make_subplots(rows=4, cols=1, shared_xaxes=False, vertical_spacing=0.07,
                        subplot_titles=("Nodes and price over time", "Pending pods over time",
                                        "Disruptions (pods evicted)", "Cost by NodePool"),
                        specs=[[{"secondary_y": True}], [{}], [{}], [{}]])
    for label, res in runs:
        xs, ys = _step(res["timeline"], "nodes", until)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv", name=f"{label}: nodes"), row=1, col=1)
        xs, ys = _step(res["timeline"], "price_usd_hour", until)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv", name=f"{label}: $/hour"),
                      row=1, col=1, secondary_y=True)
        xs, ys = _step(res["timeline"], "pending_pods", until)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv", name=f"{label}: pending pods"), row=2, col=1)
        ds = res["disruptions"]
        fig.add_trace(go.Scatter(x=[d["time_s"] / 3600 for d in ds], y=[d["pods_evicted"] for d in ds], mode="markers",
                                 text=[f"{d['reason']}: {', '.join(d['nodes'])}" for d in ds],
                                 name=f"{label}: disruptions"), row=3, col=1)
        pools = res["by_nodepool"]
        fig.add_trace(go.Bar(x=[p["nodepool"] for p in pools], y=[p["cost_usd"] for p in pools],
                             name=f"{label}: cost by pool"), row=4, col=1)
    for row in (1, 2, 3):
        fig.update_xaxes(title_text="hours", row=row, col=1)
    fig.update_layout(height=1400, title=title)
    s = result["summary"]
    summary = (f"${s['cost_usd']:.2f} over {until / 3600:g} h, {s['node_hours']:.1f} node hours, "
               f"{s['nodes_launched']} nodes launched, {s['pods_evicted']} pods evicted, "
               f"pending p95 {s['pending_seconds']['p95']:g} s")
    table = ""
    if compare:
        rows = "".join(f"<tr><td>{html.escape(r['label'])}</td><td>{r['cost_usd']:.2f}</td><td>{r['node_hours']:.1f}</td>"
                       f"<td>{r['pods_evicted']}</td><td>{r['pending_p95_s']:g}</td></tr>" for r in comparison(compare))
        table = ("<table id='compare'><tr><th>set</th><th>cost USD</th><th>node hours</th><th>pods evicted</th>"
                 f"<th>pending p95 s</th></tr>{rows}</table>")
    body = fig.to_html(full_html=False, include_plotlyjs=True, div_id="replay-plots")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
            f"<h1>{html.escape(title)}</h1><p id='summary'>{html.escape(summary)}</p>{table}{body}</body></html>\n")
