"""`provisioner replay`: read manifests and a trace, replay them, print JSON, a table or write HTML.
All I/O lives here; the simulation is provisioner.replay."""
from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone

from ..cli import add_command, bounded_int, write_out
from ..disruption.snapshot import go_duration
from ..errors import InputError
from ..manifests import read_paths
from ..replay.engine import DEFAULT_START, KARPENTER_KINDS, Options
from ..replay.output import render_html, render_json, render_table
from ..replay.parallel import replay_all
from ..replay.trace import load_trace
from .simulate import add_input_arguments, load_catalog_arg

DESCRIPTION = ("Replay a trace of workload events over simulated time through Karpenter v1.14's provisioning and "
               "disruption and the kube-scheduler: what it costs, launches, evicts and how long pods wait. "
               "Nothing sleeps. See docs/replay.md.")

DEFAULT_UNTIL_NOTE = "the last event's time, or 1h for a trace without events after 0s"


def _duration(text: str) -> float:
    seconds = go_duration(text.strip())
    if seconds is None:
        raise argparse.ArgumentTypeError("expected a Go duration such as 90s, 10m or 168h")
    return seconds


def _start(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected an RFC 3339 time such as 2026-01-05T00:00:00Z") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError("expected an RFC 3339 time with an offset, e.g. 2026-01-05T00:00:00Z")
    return value.astimezone(timezone.utc)


# Karpenter's batching windows and a NodeClaim's start-up, in seconds: (option, default, help).
_DURATIONS = (
    ("--batch-idle", 1.0, "Karpenter's BATCH_IDLE_DURATION (default 1s, as the chart)."),
    ("--batch-max", 10.0, "Karpenter's BATCH_MAX_DURATION (default 10s, as the chart)."),
    ("--node-startup", 60.0, "Launch to Ready latency of a NodeClaim (default 60s)."),
)


def register(subparsers) -> None:
    parser = add_command(subparsers, "replay", run, DESCRIPTION)
    add_input_arguments(parser)
    parser.add_argument("--trace", metavar="TRACE", help="YAML or JSON trace ({events: [...]}, docs/replay.md).")
    parser.add_argument("--batch", metavar="DIR", help="Replay every trace file in DIR (one per cluster of a fleet) "
                                                       "instead of --trace.")
    parser.add_argument("--until", type=_duration, metavar="DURATION",
                        help=f"Simulated time to replay (default: {DEFAULT_UNTIL_NOTE}).")
    parser.add_argument("--start", type=_start, default=DEFAULT_START, metavar="TIME",
                        help="RFC 3339 wall-clock time of `at: 0s`, for cron schedules and budget windows "
                             "(default 2026-01-05T00:00:00Z, a Monday).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the random choices (spot interruption "
                                                            "fractions); the same seed gives the same output (default 0).")
    for flag, default, text in _DURATIONS:
        parser.add_argument(flag, type=_duration, default=default, metavar="DURATION", help=text)
    parser.add_argument("--spot-to-spot", choices=("on", "off"), default="off",
                        help="The SpotToSpotConsolidation feature gate (default off, as upstream).")
    parser.add_argument("--compare", nargs="+", metavar="PATH",
                        help="Replay the same trace over these NodePools/EC2NodeClasses/NodeOverlays instead of "
                             "those in -f, and print both side by side.")
    parser.add_argument("--workers", type=bounded_int(1, 1024), metavar="N",
                        help="Local worker processes for --compare and --batch; with twice as many as replays, "
                             "each shares its simulations with a twin process (default: one per CPU).")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="Run the replays on this Dask distributed scheduler (e.g. tcp://127.0.0.1:8786) "
                             "instead of local processes; needs the [distributed] extra (docs/replay.md).")
    parser.add_argument("-o", "--output", choices=("table", "json", "html"), default="table", help="Output format.")
    parser.add_argument("--out", metavar="FILE", help="Write the output here instead of stdout (required for html).")


def _options(args, trace) -> Options:
    until = args.until
    if until is None:
        last = max((e.at for e in trace.events), default=0.0)
        until = last if last > 0 else 3600.0
    return Options(until=until, start=args.start, seed=args.seed, batch_idle=args.batch_idle,
                   batch_max=args.batch_max, node_startup=args.node_startup, region=args.region,
                   zones=tuple(args.zones), spot_discount=args.spot_discount, spot_to_spot=args.spot_to_spot == "on",
                   catalog=load_catalog_arg(args))


def _traces(args) -> list:
    if bool(args.trace) == bool(args.batch):
        raise InputError("give exactly one of --trace TRACE or --batch DIR")
    if args.trace:
        return [load_trace(args.trace)]
    if not os.path.isdir(args.batch):
        raise InputError("not a folder", origin=args.batch)
    files = sorted(os.path.join(args.batch, f) for f in os.listdir(args.batch) if f.endswith((".yaml", ".yml", ".json")))
    if not files:
        raise InputError("no trace files (*.yaml, *.yml, *.json)", origin=args.batch)
    return [load_trace(f) for f in files]


def run(args) -> int:
    if args.output == "html" and not args.out:
        raise InputError("-o html writes a file: give --out FILE")
    if args.compare and args.batch:
        raise InputError("--compare replays one trace: use it with --trace, not --batch")
    objects, origins = read_paths(args.paths)
    traces = _traces(args)
    jobs = [(objects, origins, t, _options(args, t)) for t in traces]
    if args.compare:
        extra, extra_origins = read_paths(args.compare)
        keep = [(o, og) for o, og in zip(objects, origins) if not (isinstance(o, dict) and o.get("kind") in KARPENTER_KINDS)]
        new = [(o, og) for o, og in zip(extra, extra_origins) if isinstance(o, dict) and o.get("kind") in KARPENTER_KINDS]
        if not new:
            raise InputError("no NodePool, EC2NodeClass or NodeOverlay to compare with", origin=", ".join(args.compare))
        both = keep + new
        jobs.append(([o for o, _ in both], [og for _, og in both], traces[0], jobs[0][3]))
    results = replay_all(jobs, args.workers, args.scheduler)
    if args.batch:
        text = _render_batch(args, traces, results)
    else:
        compare = [(", ".join(args.paths), results[0]), (", ".join(args.compare), results[1])] if args.compare else None
        result = results[0]
        if args.output == "json":
            text = render_json(result, compare)
        elif args.output == "html":
            text = _html(result, compare)
        else:
            text = render_table(result, compare)
    write_out(text, args.out)
    return 0


def _render_batch(args, traces, results) -> str:
    import json
    if args.output == "json":
        return json.dumps({"traces": [{"trace": t.origin, **r} for t, r in zip(traces, results)]}, indent=2) + "\n"
    pairs = [(t.origin, r) for t, r in zip(traces, results)]
    if args.output == "html":
        return _html(results[0], pairs, title="Karpenter replay: fleet")
    return render_table(results[0], pairs).split("Comparison:\n", 1)[-1]


def _html(result, compare, **kw) -> str:
    try:
        return render_html(result, compare, **kw)
    except ImportError as exc:
        raise InputError(f"-o html needs plotly ({exc}): pip install 'karpenter-platform-provisioner[replay-html]'") from None
