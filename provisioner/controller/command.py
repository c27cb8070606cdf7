"""`provisioner serve`: the in-cluster advisor. Wiring only; the behaviour lives in the modules."""
from __future__ import annotations

import argparse
import logging
import math
import os
import queue
import signal
import socket
import sys
import threading
import time

from ..cli import add_command, bounded_int
from .batcher import Batcher, TokenBucket
from .catalog import CatalogHolder
from .controller import Controller
from .events import EventRecorder
from .http import Health, make_server, serve_in_background
from .kinds import WATCHED
from .kube import KubernetesApi, NoKubeconfig
from .loop import run_loop, start_reflectors
from .metrics import Metrics
from .worker import PlanWorker

DESCRIPTION = ("Watch pods, nodes, DaemonSets, NodePools, NodeClaims, EC2NodeClasses and "
               "PodDisruptionBudgets; plan every batch of Unschedulable pods with the simulator; record an "
               "Event on each pod no NodePool can ever schedule; export what consolidation would do now; "
               "serve /metrics, /healthz and /readyz.")

log = logging.getLogger("provisioner.serve")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _catalog_changed(metrics: Metrics, choice) -> None:
    metrics.set_catalog(choice.source, choice.as_of)
    log.info("catalog: %s (%d instance types)%s", choice.source, len(getattr(choice.catalog, "types", None) or []),
             f"; live catalog not used: {choice.error}" if choice.error else "")


# The serve loop's intervals, in seconds: (option, default, help).
_INTERVALS = (
    ("--catalog-refresh", 6 * 3600.0, "How often to reload the live catalog (default 21600)."),
    ("--batch-idle", 1.0, "Close a batch after this long without new pending pods (default 1, as Karpenter)."),
    ("--batch-max", 10.0, "Close a batch at the latest this long after it opened (default 10, as Karpenter)."),
    ("--resync", 300.0, "Plan again this often while pods stay pending (default 300)."),
    ("--consolidation-interval", 60.0, "Run the consolidation what-if (metrics) at most this often, after a change (default 60)."),
)


def register(subparsers) -> None:
    parser = add_command(subparsers, "serve", run, DESCRIPTION)
    parser.add_argument("--mode", choices=("advisor", "metrics-only"), default=os.environ.get("PROVISIONER_MODE", "advisor"),
                        help="Advisor records Events; metrics-only writes nothing to the cluster (default advisor).")
    parser.add_argument("--listen", default="0.0.0.0", help="Address of the HTTP server (default 0.0.0.0).")
    parser.add_argument("--port", type=bounded_int(1, 65535), default=8080, help="Port of /metrics, /healthz, /readyz (default 8080).")
    parser.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
                        help="AWS region of the cluster (default $AWS_REGION).")
    parser.add_argument("--catalog", choices=("live", "bundled"), default="live",
                        help="Live: AWS APIs when the IAM role allows, else the bundled catalog (default live).")
    for flag, default, text in _INTERVALS:
        parser.add_argument(flag, type=_positive, default=default, metavar="SECONDS", help=text)
    parser.add_argument("--event-qps", type=_positive, default=2.0, help="Events written per second at most (default 2).")
    parser.add_argument("--event-burst", type=bounded_int(1, 10_000), default=20, help="Events written in a burst at most (default 20).")
    parser.add_argument("--watch-timeout", type=bounded_int(1, 86_400), default=300, metavar="SECONDS",
                        help="Server-side timeout of each watch (default 300).")
    parser.add_argument("--plan-timeout", type=_positive, default=60.0, metavar="SECONDS",
                        help="Stop a plan or consolidation what-if that runs longer (default 60; below the "
                             "120 s after which /healthz fails).")
    parser.add_argument("--record-trace", metavar="PATH", help="Write what the watches see as a replay trace "
                                                                "(docs/replay.md), rewritten every minute.")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")


def run(args) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from . import core  # the scheduling core and its catalog load only when serving

    try:  # before anything starts: without a cluster there is nothing to serve
        api = KubernetesApi.from_environment()
    except NoKubeconfig as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    clock = time.time
    metrics = Metrics(clock=clock)
    health = Health(clock)
    # Serve /healthz at once: loading the live catalog can take a while and must not look like a hang.
    try:
        server = make_server(args.listen, args.port, metrics.registry, health)
    except OSError as exc:  # port taken, an address not on this host, a privileged port
        print(f"error: cannot listen on {args.listen}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    serve_in_background(server)
    holder = CatalogHolder(core.live_loader(args.region) if args.catalog == "live" else None, core.load_bundled,
                           on_change=lambda choice: _catalog_changed(metrics, choice))
    holder.start(clock())

    instance = os.environ.get("POD_NAME") or socket.gethostname()
    recorder = None if args.mode == "metrics-only" else EventRecorder(
        api, bucket=TokenBucket(args.event_qps, args.event_burst), instance=instance)
    stop = threading.Event()
    # Plans run in a worker process with a time budget: the loop keeps beating and answers SIGTERM.
    worker = PlanWorker(core.WORKER_FUNCTIONS, budget=args.plan_timeout, stop=stop, beat=health.beat)
    controller = Controller(plan=core.make_plan(holder, args.region, worker), metrics=metrics, recorder=recorder,
                            batcher=Batcher(args.batch_idle, args.batch_max), validate=core.validate,
                            resync=args.resync, consolidate=core.make_consolidate(holder, args.region, worker),
                            consolidation_interval=args.consolidation_interval)
    messages: queue.Queue = queue.Queue()

    def shutdown(*_) -> None:
        stop.set()
        messages.put(None)  # wakes the loop now rather than at its next heartbeat

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, shutdown)
    sink, trace = messages.put, None
    if args.record_trace:
        from ..replay.recorder import TraceRecorder
        trace = TraceRecorder(args.record_trace, clock)
        sink = trace.wrap(sink)
    start_reflectors(api, WATCHED, sink, stop, watch_timeout=args.watch_timeout)
    if holder.load_live is not None:
        threading.Thread(target=holder.run, args=(stop, args.catalog_refresh, clock), name="catalog",
                         daemon=True).start()
    log.info("serving on %s:%d in %s mode", args.listen, args.port, args.mode)
    try:
        run_loop(controller, messages, stop, health, clock)
    finally:
        worker.close()
        server.shutdown()
        if trace is not None:
            trace.flush()
    return 0
