"""`provisioner trace`: write a replay trace (synthetic, or from a Kubernetes audit log). I/O only;
the traces are built by provisioner.replay.sources."""
from __future__ import annotations

import argparse

import sys

import yaml

from ..cli import add_command, bounded_int, write_out
from ..errors import InputError
from ..replay.sources import from_audit_log, synthetic
from ..replay.trace import parse_trace
from kubefacts.yamlread import Limits, UnsafeInput, read_text

DESCRIPTION = ("Write a trace for `provisioner replay` (docs/replay.md): a synthetic diurnal one, or the workload "
               "events (create, scale, delete of Deployments, StatefulSets, Jobs, CronJobs) of a Kubernetes "
               "audit log as EKS sends it to CloudWatch Logs (JSON lines).")

AUDIT_LIMITS = Limits(max_bytes=1024 * 2**20)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 < value <= 366:
        raise argparse.ArgumentTypeError("expected a number of days in (0, 366]")
    return value


def register(subparsers) -> None:
    parser = add_command(subparsers, "trace", run, DESCRIPTION)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--synthetic", action="store_true", help="A diurnal trace: services on a daily curve, "
                                                                   "cron jobs, batch bursts.")
    source.add_argument("--from-audit-log", nargs="+", metavar="FILE", help="Audit log files (JSON lines).")
    parser.add_argument("--days", type=_positive, default=7, help="Synthetic: days of trace (default 7).")
    parser.add_argument("--services", type=bounded_int(0, 100_000), default=8, help="Synthetic: Deployments (default 8).")
    parser.add_argument("--pods", type=bounded_int(0, 100_000), default=200, help="Synthetic: mean total service replicas (default 200).")
    parser.add_argument("--cronjobs", type=bounded_int(0, 100_000), default=2, help="Synthetic: CronJobs every 15 minutes (default 2).")
    parser.add_argument("--burst-jobs", type=bounded_int(0, 100_000), default=5, help="Synthetic: Jobs per batch burst, twice a day "
                                                                     "(default 5).")
    parser.add_argument("--namespace", default="default", help="Synthetic: namespace of the workloads.")
    parser.add_argument("--seed", type=int, default=0, help="Synthetic: seed of the random choices (default 0).")
    parser.add_argument("--default-run-for", default="10m", metavar="DURATION",
                        help="Audit log: runFor of a Job whose completion the log does not show (default 10m).")
    parser.add_argument("--out", metavar="FILE", help="Write the trace here (default stdout).")


def run(args) -> int:
    if args.synthetic:
        trace = synthetic(days=args.days, services=args.services, pods=args.pods, cronjobs=args.cronjobs,
                          burst_jobs=args.burst_jobs, namespace=args.namespace, seed=args.seed)
    else:
        files = []
        for path in args.from_audit_log:
            try:
                files.append((path, read_text(path, path, AUDIT_LIMITS).splitlines()))
            except UnsafeInput as exc:
                raise InputError(exc.message, origin=exc.origin) from None
        trace, counts = from_audit_log(files, args.default_run_for)
        print("trace: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()), file=sys.stderr)
    parse_trace(trace, "(generated trace)")  # what we write, replay reads
    text = yaml.safe_dump(trace, sort_keys=False)
    write_out(text, args.out)
    return 0
