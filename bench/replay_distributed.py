"""`python -m bench.replay_distributed [--traces N] [--pods P] [--days D]`: one small fleet batch
(N synthetic traces, seeds 0..N-1, provisioner.replay.bench's cluster) replayed on 2 local worker
processes and on a Dask LocalCluster of 2 worker processes on 127.0.0.1; prints wall and CPU
seconds of each (CPU: this process and its reaped children, the workers included) and checks that
the results are identical. Needs the [distributed] extra."""
from __future__ import annotations

import argparse
import resource
import time


def _cpu() -> float:
    self_, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


def _cluster() -> list:
    """provisioner.replay.bench's cluster with the EC2NodeClass the API server now requires."""
    from provisioner.replay.bench import cluster
    objects = cluster()
    objects[0]["spec"].update({"role": "KarpenterNodeRole-bench",
                               "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                               "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]})
    return objects


def main(argv=None) -> int:
    from distributed import LocalCluster

    from provisioner.replay.bench import trace_for
    from provisioner.replay.engine import Options
    from provisioner.replay.parallel import replay_all
    from provisioner.replay.trace import parse_trace

    parser = argparse.ArgumentParser(prog="python -m bench.replay_distributed")
    parser.add_argument("--traces", type=int, default=4)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--days", type=float, default=0.25)
    args = parser.parse_args(argv)
    runs = int(round(1000 * args.days / 7))
    jobs = [(_cluster(), None, parse_trace(trace_for(args.pods, args.days, runs, seed=s), f"bench-{s}"),
             Options(until=args.days * 86400)) for s in range(args.traces)]

    wall, cpu = time.perf_counter(), _cpu()
    local = replay_all(jobs, workers=2)
    print(f"local processes (--workers 2): wall {time.perf_counter() - wall:.2f} s, CPU {_cpu() - cpu:.2f} s")

    wall, cpu = time.perf_counter(), _cpu()
    with LocalCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as dask_cluster:
        started = time.perf_counter()
        remote = replay_all(jobs, scheduler=dask_cluster.scheduler_address)
        ran = time.perf_counter() - started
    print(f"Dask LocalCluster (2 worker processes): wall {time.perf_counter() - wall:.2f} s "
          f"({ran:.2f} s of it the batch, the rest cluster start and stop), CPU {_cpu() - cpu:.2f} s")
    print("identical results:", remote == local)
    return 0 if remote == local else 1


if __name__ == "__main__":
    raise SystemExit(main())
