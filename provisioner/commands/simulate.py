"""`provisioner simulate`: read manifests, plan, print JSON or a table. All I/O lives here."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from ..api import simulate
from ..cli import add_command, bounded_int
from ..loader import MAX_PODS
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, load_catalog_file
from ..errors import InputError
from ..manifests import manifest_limits, read_paths
from ..report import render_json, render_table
from ..screen import screen, skipped_lines
from ..scheduling.gcpause import gc_paused


def _zones(text: str) -> list:
    zones = [z.strip() for z in text.split(",") if z.strip()]
    if not zones:
        raise argparse.ArgumentTypeError("expected a comma-separated list of zones")
    return zones


def _discount(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("expected a fraction in [0, 1)")
    return value


def add_input_arguments(parser, *, path_metavar: str = "PATH", zones_help: str = "Zones offered") -> None:
    """-f, --catalog, --region, --zones, --spot-discount, --skip-invalid: shared by simulate, tune and consolidate."""
    parser.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar=path_metavar,
                        help="YAML file or folder of multi-document YAML (repeatable).")
    parser.add_argument("--catalog", metavar="PATH", help="Instance-type catalog JSON (default: the shipped EC2 catalog).")
    parser.add_argument("--region", default=DEFAULT_REGION, help=f"AWS region label (default {DEFAULT_REGION}).")
    parser.add_argument("--zones", type=_zones, default=list(DEFAULT_ZONES), metavar="A,B,C",
                        help=f"{zones_help} (default {','.join(DEFAULT_ZONES)}).")
    parser.add_argument("--spot-discount", type=_discount, default=DEFAULT_SPOT_DISCOUNT, metavar="FRACTION",
                        help=f"Assumed spot discount off on-demand for estimated spot prices (default {DEFAULT_SPOT_DISCOUNT}).")
    add_skip_invalid(parser)


def add_skip_invalid(parser) -> None:
    """--skip-invalid: shared by simulate, tune, drift and consolidate."""
    parser.add_argument("--skip-invalid", action="store_true",
                        help="Ignore NodePools, EC2NodeClasses, NodeClaims and NodeOverlays the API server or Karpenter "
                             "would refuse, listing each with its reason, instead of exiting 2 (for cluster dumps "
                             "holding stale objects).")


def screened(objects, origins, args) -> tuple[list, list, list[str]]:
    """The input without invalid Karpenter objects when --skip-invalid is given (with a line per
    object left out); otherwise the first invalid object ends the command (exit 2)."""
    kept, kept_origins, skipped = screen(objects, origins, skip_invalid=args.skip_invalid)
    return kept, list(kept_origins or []), skipped_lines(skipped)


def write_report(report: Any, output: str, render_table: Callable[[Any], str]) -> None:
    """Print a report (consolidate's, drift's): `-o json` its to_dict() indented, else its table."""
    if output == "json":
        json.dump(report.to_dict(), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(report))


def load_catalog_arg(args):
    catalog = load_catalog_file(args.catalog) if args.catalog else None
    if catalog is not None and not catalog.types:
        raise InputError("the catalog has no instance types", origin=args.catalog)
    return catalog


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "simulate", run,
        description="Simulate Karpenter v1.14 provisioning for NodePools, EC2NodeClasses, workloads and existing Nodes.")
    add_input_arguments(parser)
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="Output format.")
    parser.add_argument("--max-pods", type=bounded_int(1, 10**9), default=MAX_PODS, metavar="N",
                        help=f"Refuse inputs that expand to more pods than this (default {MAX_PODS:,}).")


def run(args) -> int:
    # The collector would only rescan the objects of the loaded manifests and the plan (all alive
    # until the output is written); the solve pauses it too, this keeps it off around it.
    with gc_paused():
        return _run(args)


def _run(args) -> int:
    objects, origins = read_paths(args.paths, manifest_limits(args.max_pods))
    objects, origins, skipped = screened(objects, origins, args)
    catalog = load_catalog_arg(args)
    result = simulate(objects, catalog=catalog, region=args.region, zones=args.zones,
                      spot_discount=args.spot_discount, origins=origins, max_pods=args.max_pods)
    result.warnings[:0] = skipped
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.output == "json":
        # One write: json.dump streams one write() per token (millions of syscalls at 20k pods).
        sys.stdout.write(render_json(result))
    else:
        sys.stdout.write(render_table(result))
    return 0
