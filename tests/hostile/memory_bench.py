"""`python -m tests.hostile.memory_bench NODES DEPLOYMENTS [--trace]`: peak memory of one plan over
NODES existing nodes and DEPLOYMENTS Deployments with a preferred zone anti-affinity, each with a
running replica in every zone and one pending (the input that grew the advisor past 1 Gi; the
objects of tests/provisioner/scheduling/test_memory.py). Prints the plan time, VmHWM (peak RSS) and,
with --trace, tracemalloc's peak."""
from __future__ import annotations

import sys
import time
import tracemalloc

from provisioner import api
from tests.provisioner.scheduling.test_memory import _objects


def main(argv: list[str]) -> int:
    nodes, deployments = int(argv[0]), int(argv[1])
    objects = _objects(nodes, deployments)
    if "--trace" in argv:
        tracemalloc.start()
    started = time.perf_counter()
    summary = api.simulate(objects).to_dict()["summary"]
    seconds = time.perf_counter() - started
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    traced = f", tracemalloc peak {tracemalloc.get_traced_memory()[1] / 2**20:.1f} MiB" if tracemalloc.is_tracing() else ""
    print(f"{nodes} nodes, {deployments} Deployments: {summary['scheduled']} pods placed in {seconds:.1f} s, "
          f"peak RSS {peak / 1024:.0f} MiB{traced}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
