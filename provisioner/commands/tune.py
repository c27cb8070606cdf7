"""`provisioner tune`: read manifests, search cheaper NodePool requirements, print JSON or a table."""
from __future__ import annotations

import sys

import yaml

from ..cli import HELP
from ..cost.tune import tune
from ..errors import InputError
from ..loader import load_objects
from ..manifests import read_paths
from .simulate import add_input_arguments, load_catalog_arg, screened


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune", help=HELP["tune"],
        description="Search per-NodePool requirement changes that lower Karpenter's simulated plan price without "
                    "leaving more pods unschedulable; only narrows pools, never touches taints, labels, capacity "
                    "types, zones or architectures.")
    add_input_arguments(parser)
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
    parser.set_defaults(run=run)


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
           f"Searched {result.evaluations} plans in {result.seconds:.1f} s.", ""]
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
        result = tune(inputs, catalog=catalog, region=args.region, zones=args.zones, spot_discount=args.spot_discount)
    except ImportError as exc:
        raise InputError(f"tune needs scipy for the LP bound ({exc}); "
                         "install it with pip install 'karpenter-platform-provisioner[tune]'") from None
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.output == "json":
        import json
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_table(result))
    return 0
