"""`provisioner consolidate`: read a cluster snapshot, print what Karpenter's consolidation would
start now (JSON or a table). All I/O lives here; the semantics are in provisioner.disruption."""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

from ..cli import add_command
from ..disruption.controller import consolidate
from ..disruption.report import render_table
from ..state.reader import load_cluster
from ..manifests import read_paths
from .simulate import add_input_arguments, load_catalog_arg, screened, write_report

DESCRIPTION = ("From a snapshot of NodePools, EC2NodeClasses, Nodes, NodeClaims, Pods, PodDisruptionBudgets and "
               "DaemonSets (kubectl get -o yaml), the disruption command Karpenter v1.14 would start in its "
               "current pass, and the reason each other Karpenter-managed node stays.")


def _time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.rstrip("Zz"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected a UTC time like 2026-05-04T09:30") from None
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def register(subparsers) -> None:
    parser = add_command(subparsers, "consolidate", run, DESCRIPTION)
    add_input_arguments(parser, path_metavar="SNAPSHOT",
                        zones_help="Zones offered to replacements, besides the nodes' own")
    parser.add_argument("--spot-to-spot", choices=("on", "off"), default=None,
                        help="Karpenter's SpotToSpotConsolidation feature gate (default: as the snapshot shows it, in "
                             "a Karpenter Deployment's FEATURE_GATES or the chart's values; else off, as upstream).")
    parser.add_argument("--at", type=_time, default=None, metavar="YYYY-MM-DDTHH:MM",
                        help="UTC time at which scheduled disruption budgets are evaluated (default: now).")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="Output format.")


def run(args) -> int:
    objects, origins = read_paths(args.paths)
    objects, origins, skipped = screened(objects, origins, args)
    catalog = load_catalog_arg(args)
    snap = load_cluster(objects, origins)
    read = snap.inputs.warnings if snap.inputs is not None else []  # the reader always sets inputs
    for warning in skipped + list(read):
        print(f"warning: {warning}", file=sys.stderr)
    gate = None if args.spot_to_spot is None else args.spot_to_spot == "on"
    result = consolidate(snap, catalog=catalog, region=args.region, zones=args.zones, spot_discount=args.spot_discount,
                         spot_to_spot=gate, now=args.at or datetime.now(timezone.utc).replace(tzinfo=None))
    write_report(result, args.output, render_table)
    return 0
