"""`python -m provisioner.disruption.bench [NODES...] [--runs N] [--worst]`: time the consolidation
what-if on synthetic clusters (one NodePool, m5 nodes, 500m/1Gi pods, 10% budget, the shipped
catalog), once with nodes a third full (multi-node consolidation finds a command quickly) and once
with m5.xlarge nodes 90% full in a NodePool of m5.xlarge only (nothing can go: single-node
consolidation simulates every candidate, the worst case; `--worst` runs only that one).

Prints per cluster the median over `--runs` passes (default 3) of the pass's wall time
(`seconds`) and CPU time (`cpu`, time.process_time: the machine is shared), the time to read
the snapshot once (`load`), and the answer's first action."""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from ..state.reader import load_cluster
from .controller import consolidate

SIZES = {"m5.large": ("1930m", "6903Mi", 2), "m5.xlarge": ("3920m", "14162Mi", 4), "m5.2xlarge": ("7910m", "29317Mi", 8)}


def cluster(nodes: int, fill: float = 1 / 3, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    full = fill > 0.5
    only = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}] if full else []
    objs = [{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
             "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-bench",
                      "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                      "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]}},
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
             "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                             "name": "default"},
                                            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                                              "values": ["on-demand"]}] + only}},
                      "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}}}]
    for i in range(nodes):
        itype = "m5.xlarge" if full else rng.choice(list(SIZES))
        cpu, memory, vcpu = SIZES[itype]
        name = f"node-{i:04d}"
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true", "karpenter.sh/capacity-type": "on-demand",
            "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/zone": rng.choice("abc").join(["us-east-1", ""]),
            "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "58"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
        for j in range(max(1, int(vcpu * 2 * fill))):
            objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"app-{i}-{j}", "namespace": "default", "labels": {"app": f"app-{i % 7}"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{i % 7}"}]},
                "spec": {"nodeName": name, "containers": [{"name": "c", "image": "c", "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}})
    return objs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m provisioner.disruption.bench")
    parser.add_argument("sizes", nargs="*", type=int, metavar="NODES", help="cluster sizes (default 10 50 200)")
    parser.add_argument("--runs", type=int, default=3, help="passes per cluster; the medians are printed")
    parser.add_argument("--worst", action="store_true", help="only the 90%%-full clusters")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    sizes = args.sizes or [10, 50, 200]
    fills = (0.9,) if args.worst else (1 / 3, 0.9)
    print(f"{'fill':>5} {'nodes':>6} {'pods':>6} {'seconds':>8} {'cpu':>7} {'load':>6}  first action")
    for fill, n in [(f, n) for f in fills for n in sizes]:
        objs = cluster(n, fill)
        started = time.perf_counter()
        snap = load_cluster(objs)
        load = time.perf_counter() - started
        walls, cpus = [], []
        for _ in range(max(1, args.runs)):
            wall, cpu = time.perf_counter(), time.process_time()
            result = consolidate(snap)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        first = result.actions[0] if result.actions else None
        what = f"{first.kind} {len(first.nodes)} node(s) ({first.method}), saves ${first.savings:.4f}/h" if first else "none"
        pods = sum(1 for o in objs if o["kind"] == "Pod")
        print(f"{fill:>5.0%} {n:>6} {pods:>6} {statistics.median(walls):>8.3f} {statistics.median(cpus):>7.3f} "
              f"{load:>6.2f}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
