"""`provisioner tune`: read manifests, search cheaper NodePool requirements, print JSON or a table."""
from __future__ import annotations

import sys

import yaml

from ..cli import add_command
from ..cost.tune import tune
from ..errors import InputError
from ..loader import load_objects
from ..manifests import read_paths
from .simulate import add_input_arguments, load_catalog_arg, screened

DESCRIPTION = ("Search per-NodePool requirement changes that lower Karpenter's simulated plan price without "
               "leaving more pods unschedulable; only narrows pools, never touches taints, labels, capacity "
               "types, zones or architectures.")


def register(subparsers) -> None:
    parser = add_command(subparsers, "tune", run, DESCRIPTION)
    add_input_arguments(parser)
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="Output format.")
    parser.add_argument("--replay", metavar="TRACE", help="Judge the changes over this trace (docs/replay.md): keep "
                                                          "those that lower the replayed cost without raising "
                                                          "evictions or the pending p95.")
    parser.add_argument("--until", metavar="DURATION", help="With --replay: simulated time (default: the last event).")
    parser.add_argument("--workers", type=int, metavar="N", help="With --replay: local worker processes.")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="With --replay: run the replays on this Dask "
                                                               "distributed scheduler (docs/replay.md).")


def team_yaml(result) -> str:
    """The changes as team-file snippets for NodePools this platform rendered (`<team>-<pool>`)."""
    blocks = []
    for change in result.change_list():
        team = result.teams.get(change["nodepool"])
        if team is None or not change["nodepool"].startswith(team + "-"):
            continue
        pool = change["nodepool"][len(team) + 1:]
        doc = {"nodePools": [{"name": pool, "requirements": change["requirements"]}]}
        blocks.append(f"# stacks/teams/{team}.yaml: merge into nodePools[name={pool}] "
                      "(requirements merge by key)\n" + yaml.safe_dump(doc, sort_keys=False))
    return "\n".join(blocks)


def render_table(result) -> str:
    base, tuned, bound = result.baseline, result.tuned, result.bound_usd_hour
    saving = 100 * (1 - tuned.price_usd_hour / base.price_usd_hour) if base.price_usd_hour else 0.0
    ratio = f", {tuned.price_usd_hour / bound:.2f}x the bound" if bound > 0 else ""
    out = [f"Baseline: ${base.price_usd_hour:.4f}/hour, {base.unschedulable} unschedulable",
           f"Tuned:    ${tuned.price_usd_hour:.4f}/hour, {tuned.unschedulable} unschedulable (-{saving:.1f} %{ratio})",
           f"LP lower bound: ${bound:.4f}/hour",
           f"Searched {result.evaluations} plans in {result.seconds:.1f} s."
           + (f" {result.refused} candidate change set(s) refused by the caller's check." if result.refused else ""), ""]
    changes = result.change_list()
    if not changes:
        out.append("No requirement change makes the plan cheaper.")
    else:
        out.append("Changes (each replaces the NodePool requirement with the same key, or is added):")
        for change in changes:
            out.append(f"  {change['nodepool']}:")
            for r in change["requirements"]:
                out.append(f"    {r['key']} {r['operator']} {', '.join(r['values'])}")
        snippets = team_yaml(result)
        if snippets:
            out += ["", "Team files:", snippets.rstrip()]
    return "\n".join(out) + "\n"


def run(args) -> int:
    objects, origins = read_paths(args.paths)
    objects, origins, skipped = screened(objects, origins, args)
    catalog = load_catalog_arg(args)
    inputs = load_objects(objects, origins)
    inputs.warnings[:0] = skipped
    if not inputs.nodepools:
        raise InputError("no NodePool in the input: nothing to tune", origin=", ".join(args.paths))
    try:
        # `accept`: a veto the caller's shell passes in (offline.tune: the platform's policy pack).
        result = tune(inputs, catalog=catalog, region=args.region, zones=args.zones, spot_discount=args.spot_discount,
                      accept=getattr(args, "accept", None))
    except ImportError as exc:
        raise InputError(f"tune needs scipy for the LP bound ({exc}); "
                         "install it with pip install 'karpenter-platform-provisioner[tune]'") from None
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    judged = _replay(args, objects, origins, catalog, result) if args.replay else None
    if args.output == "json":
        import json
        data = result.to_dict()
        if judged is not None:
            data["replay"] = judged
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_table(result))
        if judged is not None:
            sys.stdout.write(render_replay(judged))
    return 0


def _replay(args, objects, origins, catalog, result) -> dict:
    """The changes judged over the trace (provisioner.replay.judge)."""
    from ..disruption.snapshot import go_duration
    from ..replay.engine import Options
    from ..replay.judge import judge
    from ..replay.trace import load_trace
    trace = load_trace(args.replay)
    until = go_duration(args.until) if args.until else max((e.at for e in trace.events), default=0.0) or 3600.0
    if until is None:
        raise InputError(f"invalid duration {args.until!r} (expected e.g. 24h)", path="--until")
    options = Options(until=until, region=args.region, zones=tuple(args.zones), spot_discount=args.spot_discount,
                      catalog=catalog)
    return judge(objects, origins, trace, options, result.change_list(), args.workers, args.scheduler)


def render_replay(judged: dict) -> str:
    b = judged["baseline"]
    out = ["", f"Over the trace (replay): baseline ${b['cost_usd']:.2f}, {b['node_hours']:.1f} node hours, "
               f"{b['pods_evicted']} pods evicted, pending p95 {b['pending_p95_s']:g} s"]
    for c in judged["candidates"]:
        r = c["replay"]
        out.append(f"  {c['nodepool']}: ${r['cost_usd']:.2f}, {r['pods_evicted']} evicted, p95 {r['pending_p95_s']:g} s: "
                   f"{'kept' if c['accepted'] else 'dropped'} ({c['why']})")
    t = judged["tuned"]
    out.append(f"Kept {len(judged['accepted'])} change(s): ${t['cost_usd']:.2f} over the trace.")
    return "\n".join(out) + "\n"
