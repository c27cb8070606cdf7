"""`python -m provisioner.replay.bench [--pods N] [--days D] [--job-runs J] [--series]`: time a replay
of a synthetic cluster (one on-demand NodePool of m5/c5/r5, WhenEmptyOrUnderutilized after 1m,
20 services on a daily curve changed every hour, one CronJob every 15 minutes and twice-daily
batch bursts making up `job-runs` Job runs) and print wall seconds, CPU seconds, peak memory and
the replay's own figures. `--series` runs a grid of sizes, each in its own process (so each peak
memory is its own), to show how time grows with cluster size and trace length.

The issue's figure is `--pods 2000 --days 7 --job-runs 1000` (BENCHMARKS.md)."""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

from . import cluster as replay_cluster
from . import disruption as replay_disruption
from ..disruption import controller as disruption_controller
from ..disruption import pass_state, simulation
from . import engine
from .engine import Options, replay
from .parallel import default_cpus, twinned
from .sources import synthetic
from .trace import parse_trace

SERIES = [(100, 0.5), (200, 0.5), (400, 0.5), (200, 0.25), (200, 1)]


def cluster() -> list:
    return [{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
             # A valid EC2NodeClass: the replay judges its inputs as the API server does.
             "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-bench",
                      "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                      "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]}},
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
             "spec": {"template": {"spec": {
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                 "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                                  {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                   "values": ["m5", "c5", "r5"]}]}},
                 "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}}}]


def trace_for(pods: int, days: float, job_runs: int, seed: int = 0) -> dict:
    cron_runs = int(96 * days)  # one CronJob every 15 minutes
    bursts = max(1, int(round(2 * days)))
    burst_jobs = max(0, int(round((job_runs - cron_runs) / bursts)))
    return synthetic(days=days, services=20, pods=pods, cronjobs=1, burst_jobs=burst_jobs, seed=seed)


# What --split times: (owner, function name, label), outermost first.
SPLIT = [(engine, "disruption_pass", "disruption passes, whole"),
         (replay_disruption, "_pass_api", "  the disruption API (the rest: the replay's state as objects)"),
         (pass_state.PassState, "__init__", "    its set-up: candidates, nodes prepared"),
         (disruption_controller, "run_pass", "    the methods"),
         (simulation.Simulator, "run", "      their scheduling simulations"),
         (replay_cluster.Cluster, "kube_schedule", "the kube-scheduler's binding"),
         (replay_cluster.Cluster, "provision", "provisioning (batches)")]


def split_timers() -> dict:
    """Wrap the parts of a replay named in SPLIT with CPU timers: label -> [seconds, calls]."""
    totals: dict = {}
    for owner, name, label in SPLIT:
        inner = getattr(owner, name)
        totals[label] = [0.0, 0]

        def timed(*args: Any, _inner: Any = inner, _cell: list = totals[label], **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return _inner(*args, **kwargs)
            finally:
                _cell[0] += time.process_time() - start
                _cell[1] += 1
        setattr(owner, name, timed)
    return totals


def measure(pods: int, days: float, job_runs: int, processes: int = 1) -> dict:
    """processes 2: the replay shares its simulations with a twin process (replay/twin.py), whose
    CPU seconds and peak memory are reported apart (twin_cpu_s, twin_peak_mib)."""
    doc = trace_for(pods, days, job_runs)
    trace = parse_trace(doc, "bench")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu = time.perf_counter(), time.process_time()
    result = replay(cluster(), None, trace, Options(until=days * 86400, processes=processes))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    s = result["summary"]
    out = {"pods": pods, "days": days, "job_runs": job_runs, "events": len(trace.events), "processes": processes,
           "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_mib": round(peak, 1),
           "x_real_time": round(days * 86400 / wall), "nodes_launched": s["nodes_launched"],
           "disruptions": len(result["disruptions"]), "pods_evicted": s["pods_evicted"]}
    if processes > 1:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["twin_cpu_s"] = round(after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime, 2)
        out["twin_peak_mib"] = round(after.ru_maxrss / 1024, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m provisioner.replay.bench")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--days", type=float, default=7)
    parser.add_argument("--job-runs", type=int, default=None, help="default: 1000 per 7 days, pro rata")
    parser.add_argument("--series", action="store_true", help="run the grid of sizes, one process each")
    parser.add_argument("--json", action="store_true", help="print one JSON line (used by --series)")
    parser.add_argument("--processes", type=int, choices=(1, 2), default=None,
                        help="2: the replay shares its simulations with a twin process, as `replay` does "
                             "(default: as `replay` chooses, 2 for a day or more when two CPUs are free)")
    parser.add_argument("--split", action="store_true",
                        help="also print the CPU seconds of the replay's parts (timers, no profiler)")
    args = parser.parse_args(argv)
    if args.series:
        print(f"{'pods':>5} {'days':>5} {'jobs':>5} {'events':>7} {'wall_s':>7} {'cpu_s':>7} {'peak_MiB':>8} "
              f"{'x_real':>7} {'launched':>8} {'disrupt':>7}")
        for pods, days in SERIES:
            argv = [sys.executable, "-m", "provisioner.replay.bench", "--pods", str(pods), "--days", str(days), "--json"]
            if args.processes is not None:
                argv += ["--processes", str(args.processes)]
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            r = json.loads(out)
            print(f"{r['pods']:>5} {r['days']:>5g} {r['job_runs']:>5} {r['events']:>7} {r['wall_s']:>7} {r['cpu_s']:>7} "
                  f"{r['peak_mib']:>8} {r['x_real_time']:>7} {r['nodes_launched']:>8} {r['disruptions']:>7}")
        return 0
    job_runs = args.job_runs if args.job_runs is not None else int(round(1000 * args.days / 7))
    if args.processes is None:
        args.processes = 2 if twinned(args.days * 86400, default_cpus(), 1) else 1
    totals = split_timers() if args.split else None
    r = measure(args.pods, args.days, job_runs, args.processes)
    if totals is not None:
        r["split_cpu_s"] = {label.strip(): round(t, 2) for label, (t, _) in totals.items()}
    print(json.dumps(r) if args.json else "\n".join(f"{k}: {v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
