"""`provisioner drift`: read the before/after manifests (and a snapshot), print what drifts. All I/O here."""
from __future__ import annotations

import sys

from ..cli import add_command
from ..disruption.drift import DriftReport, drift
from ..manifests import read_paths
from .simulate import add_skip_invalid, screened, write_report


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "drift", run,
        description="Preview Karpenter v1.14 drift between two sets of NodePools and EC2NodeClasses.")
    parser.add_argument("--before", required=True, metavar="DIR_OR_FILE", help="Manifests as deployed now.")
    parser.add_argument("--after", required=True, metavar="DIR_OR_FILE", help="Manifests after the change.")
    parser.add_argument("-f", "--filename", dest="snapshot", action="append", metavar="SNAPSHOT",
                        help="Nodes and/or NodeClaims as `kubectl get -o yaml` prints them (repeatable); "
                             "without it node counts are null.")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="Output format.")
    add_skip_invalid(parser)


def run(args) -> int:
    before, before_origins, skipped = screened(*read_paths([args.before]), args)
    after, after_origins, skipped_after = screened(*read_paths([args.after]), args)
    skipped += skipped_after
    snapshot, snapshot_origins = None, None
    if args.snapshot:
        snapshot, snapshot_origins, skipped_snapshot = screened(*read_paths(args.snapshot), args)
        skipped += skipped_snapshot
    for line in skipped:
        print(f"warning: {line}", file=sys.stderr)
    report = drift(before, after, snapshot, before_origins=before_origins, after_origins=after_origins,
                   snapshot_origins=snapshot_origins)
    write_report(report, args.output, render_table)
    return 0


def _causes(causes) -> str:
    return "; ".join(f"{c.kind} {c.path}" if c.path else c.kind for c in causes) or "-"


def _state(item) -> str:
    return "added" if item.added else "yes" if item.drift else "no"


def render_table(report: DriftReport) -> str:
    data = report.to_dict()
    rows = [("NODEPOOL", "DRIFT", "NODES", "CAUSES")]
    for pool in report.nodepools:
        rows.append((pool.name, _state(pool), "-" if pool.nodes is None else str(pool.nodes),
                     _causes(pool.causes)))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]:>{width[2]}}  {r[3]}" for r in rows]
    classes = [("EC2NODECLASS", "DRIFT", "CAUSES")] + [
        (c.name, _state(c), _causes(c.causes)) for c in report.nodeclasses]
    cw = [max(len(r[i]) for r in classes) for i in range(2)]
    lines += [""] + [f"{r[0]:<{cw[0]}}  {r[1]:<{cw[1]}}  {r[2]}" for r in classes]
    summary = data["summary"]
    nodes = ("nodes replaced: unknown (no snapshot; pass -f with Nodes/NodeClaims)" if summary["nodes_replaced"] is None
             else f"{summary['nodes_replaced']} node(s) replaced")
    lines += ["", f"Summary: {summary['nodepools_drifted']} of {len(report.nodepools)} NodePool(s) drift, {nodes}"]
    return "\n".join(lines) + "\n"
