"""`python -m bench` (`make bench`): scheduling throughput and plan cost vs an LP bound.

Part a times the scheduler alone (Solve, as Karpenter's benchmark does) on Karpenter's benchmark
shape; part b simulates mixed workloads end to end on the shipped catalog and compares the plan's
hourly price with the LP lower bound of provisioner.cost.lpbound; part c times the engine end to
end (engine.py); part d compares open pools, the presets and tune against the bound (presets.py).
Figures are printed as Markdown tables; `--only PART` runs one part.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time

from provisioner.loader import load_objects
from provisioner.api import simulate_inputs
from provisioner.scheduling.scheduler import Scheduler
from . import synthetic


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def throughput(sizes, repeat: int, out) -> list:
    types, pool = synthetic.instance_types(), synthetic.nodepool()
    rows = []
    for size in sizes:
        pods = synthetic.diverse_pods(size)
        times, cpu, nodes = [], [], 0
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = Scheduler([(pool, types)]).solve(pods)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            if result.errors:  # like Karpenter's benchmark: every pod must schedule
                raise SystemExit(f"{len(result.errors)} of {size} pods did not schedule: {next(iter(result.errors.values()))}")
            nodes = len(result.nodeclaims)
        rows.append((size, nodes, statistics.median(times), min(times), statistics.median(cpu)))
    # CPU seconds too: on a shared machine wall time moves with the load, CPU time far less.
    print("| pods | nodeclaims | seconds (median) | seconds (best) | pods/s (median) | time growth vs previous "
          "| CPU seconds (median) | pods/s (CPU) |", file=out)
    print("|---:|---:|---:|---:|---:|---|---:|---:|", file=out)
    previous = None
    for size, nodes, median, best, cpu_median in rows:
        growth = ""
        if previous:
            ratio = median / previous[2]
            exponent = math.log(ratio) / math.log(size / previous[0])
            growth = f"x{ratio:.2f} for x{size / previous[0]:.0f} pods (exponent {exponent:.2f})"
        print(f"| {size:,} | {nodes:,} | {median:.2f} | {best:.2f} | {size / median:,.0f} | {growth} "
              f"| {cpu_median:.2f} | {size / max(cpu_median, 1e-9):,.0f} |", file=out)
        previous = (size, nodes, median)
    return rows


def preferences(repeat: int, out) -> None:
    """Karpenter's RespectPreferences case: every pod relaxes two preferences before it lands."""
    types, pool = synthetic.instance_types(), synthetic.nodepool()
    pods = synthetic.preference_pods(4000)
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = Scheduler([(pool, types)]).solve(pods)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    median, cpu_median = statistics.median(times), statistics.median(cpu)
    print(f"| 4,000 preference pods | {len(result.nodeclaims):,} | {median:.2f} | {min(times):.2f} | "
          f"{4000 / median:,.0f} | unschedulable: {len(result.errors)} | {cpu_median:.2f} | "
          f"{4000 / max(cpu_median, 1e-9):,.0f} |", file=out)


def cost(out) -> list:
    from .lpbound import lower_bound
    from .workloads import WORKLOADS
    rows = []
    print("| workload | pods | nodeclaims | plan $/h | LP bound $/h | gap | CPU / memory requested of allocatable | simulate s | LP s |",
          file=out)
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|", file=out)
    for name, (make, _generic) in WORKLOADS.items():
        inputs = load_objects(make())
        start = time.perf_counter()
        result = simulate_inputs(inputs)
        sim = time.perf_counter() - start
        start = time.perf_counter()
        bound = lower_bound(inputs)
        lp = time.perf_counter() - start
        gap = 100 * (result.price_usd_hour / bound.price_usd_hour - 1)
        rows.append((name, result, bound, gap))
        used = {k: sum(nc.requests.get(k, 0) for nc in result.nodeclaims) /
                max(sum(nc.allocatable.get(k, 0) for nc in result.nodeclaims), 1) for k in ("cpu", "memory")}
        print(f"| {name} | {result.pods:,} | {len(result.nodeclaims)} | {result.price_usd_hour:.3f} | "
              f"{bound.price_usd_hour:.3f} | {gap:.1f} % | {used['cpu']:.0%} / {used['memory']:.0%} | {sim:.2f} | {lp:.2f} |",
              file=out)
        if result.unschedulable:
            print(f"|   ({len(result.unschedulable)} pods unschedulable) | | | | | | | | |", file=out)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000", help="Pod counts for part a (comma-separated).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per size; the median is reported.")
    parser.add_argument("--skip-cost", action="store_true", help="Skip part b (needs scipy).")
    parser.add_argument("--profile", type=int, metavar="PODS", help="Profile one run of part a at this size with cProfile instead.")
    parser.add_argument("--skip-engine", action="store_true", help="Skip part c (end to end, 50k solve, 200 NodePools).")
    parser.add_argument("--skip-presets", action="store_true", help="Skip part d (presets and tune vs the LP bound).")
    parser.add_argument("--only", choices=("throughput", "cost", "engine", "presets"),
                        help="Run one part only.")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.profile:
        import cProfile
        import pstats
        pods, types = synthetic.diverse_pods(args.profile), synthetic.instance_types()
        profiler = cProfile.Profile()
        profiler.runcall(Scheduler([(synthetic.nodepool(), types)]).solve, pods)
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        return 0
    load = ", load average %.1f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    print(f"Machine: {_cpu_model()}, {_cores()} cores{load}; Python {platform.python_version()}; "
          f"numpy {__import__('numpy').__version__}", file=out)
    if args.only:
        return _only(args.only, args.repeat, out, [int(s) for s in args.sizes.split(",")])
    print("\n## a. Scheduling throughput (Karpenter's benchmark shape, 400 synthetic instance types)\n", file=out)
    throughput([int(s) for s in args.sizes.split(",")], args.repeat, out)
    preferences(args.repeat, out)
    if not args.skip_cost:
        print("\n## b. Plan cost against the LP lower bound (shipped EC2 catalog, us-east-1)\n", file=out)
        cost(out)
    if not args.skip_engine:
        print("\n## c. Engine: end to end, solve growth, 200 NodePools\n", file=out)
        from . import engine
        engine.run(out, args.repeat)
    if not args.skip_presets and not args.skip_cost:
        print("\n## d. Presets and tune against the LP bound (realistic workloads)\n", file=out)
        from . import presets
        presets.run(out)
    return 0


def _only(part: str, repeat: int, out, sizes=(1000, 5000, 20000)) -> int:
    if part == "throughput":
        throughput(sizes, repeat, out)
    elif part == "cost":
        cost(out)
    elif part == "presets":
        from . import presets
        presets.run(out)
    elif part == "engine":
        from . import engine
        engine.run(out, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
