"""Engine figures (`python -m bench engine`): where wall time goes outside the solve.

* e2e: `provisioner simulate -f <yaml> --catalog <json> -o json` in-process, on Karpenter's
  benchmark shape written as Deployments (identical pods of a group share one), output to a file;
  then as a process writing to a pipe, and the same steps in a process with a CPU mark after each
  (start-up, imports, YAML, loading, solve, encoding, exit);
* solve: the scheduler alone at 20k and 50k pods (linear growth expected);
* advisor: one advisor plan (`controller.core.make_plan`) over 200 NodePools;
* policies: `policies.check` evaluation over a stack with 200 NodePools.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time

import yaml

from kubefacts import labels as L
from provisioner.scheduling.scheduler import Scheduler
from . import synthetic

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def fake_catalog(total: int = 400) -> dict:
    """fake.InstanceTypes(400) in the catalog file format (the catalog adds AWS-style overhead)."""
    types = []
    for i in range(total):
        cpu, memory_gib = i + 1, 2 * (i + 1)
        price = round(0.1 * cpu + 0.1 * memory_gib, 4)
        offerings = [{"zone": z, "capacity_type": "spot", "price": price} for z in ZONES[:2]]
        offerings += [{"zone": z, "capacity_type": "on-demand", "price": price} for z in ZONES]
        types.append({"name": f"fake-it-{i}", "vcpu": cpu, "memory_mib": memory_gib * 1024, "max_pods": 10 * cpu,
                      "price_od_usd_hour": price, "offerings": offerings})
    return {"instance_types": types}


def _deployment(name, replicas, cpu, memory, labels, extra=None):
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            **(extra or {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def benchmark_shape_objects(count: int, seed: int = 42) -> list:
    """makeDiversePods(count) as Deployments: one per (group, labels, selector, cpu, memory)."""
    rng = random.Random(seed)
    group = count // 5
    buckets: dict = {}

    def add(kind, labels, extra_key, extra):
        key = (kind, json.dumps(labels, sort_keys=True), extra_key, rng.choice(synthetic.CPUS),
               rng.choice(synthetic.MEMORIES))
        entry = buckets.setdefault(key, [labels, extra, 0])
        entry[2] += 1

    def label():
        return {"my-label": rng.choice(synthetic.LABEL_VALUES)}

    for _ in range(group):
        add("plain", label(), None, None)
    for key in (L.ZONE, L.HOSTNAME):
        for _ in range(group):
            labels, selector = label(), label()
            tsc = [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": selector}}]
            add("spread-" + key, labels, json.dumps(selector), {"topologySpreadConstraints": tsc})
    for _ in range(group):
        labels = {"my-affininity": rng.choice(synthetic.LABEL_VALUES)}
        add("affinity", labels, None, {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": L.ZONE, "labelSelector": {"matchLabels": labels}}]}}})
    for _ in range(group):
        labels = {"app": "nginx"}
        add("anti", labels, None, {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": L.HOSTNAME, "labelSelector": {"matchLabels": labels}}]}}})
    for _ in range(count - 5 * group):
        add("plain", label(), None, None)
    objects = [{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-bench",
                      "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                      "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]}},
               {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
                "spec": {"limits": {"cpu": "10000000", "memory": "10000000Gi"},
                         "template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                                "name": "default"}, "requirements": []}}}}]
    for n, ((kind, _, _, cpu, memory), (labels, extra, replicas)) in enumerate(sorted(buckets.items(), key=str)):
        objects.append(_deployment(f"{kind.split('/')[-1]}-{n}", replicas, cpu, memory, dict(labels), extra))
    return objects


def _write_inputs(folder: str, count: int) -> tuple[str, str]:
    """(manifests, catalog) paths: `count` pods in the benchmark shape as YAML, the fake catalog as JSON."""
    manifests, catalog = os.path.join(folder, "pods.yaml"), os.path.join(folder, "catalog.json")
    with open(manifests, "w", encoding="utf-8") as handle:
        yaml.safe_dump_all(benchmark_shape_objects(count), handle)
    with open(catalog, "w", encoding="utf-8") as handle:
        json.dump(fake_catalog(), handle)
    return manifests, catalog


def e2e(count: int, repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of `simulate -o json` in-process, stdout to a file."""
    from provisioner.cli import main
    with tempfile.TemporaryDirectory() as tmp:
        (manifests, catalog), out = _write_inputs(tmp, count), os.path.join(tmp, "out.json")
        times, cpu = [], []
        for _ in range(repeat):
            with open(out, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
                start, start_cpu = time.perf_counter(), time.process_time()
                code = main(["simulate", "-f", manifests, "--catalog", catalog, "-o", "json"])
                sink.flush()
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            if code != 0:
                raise SystemExit(f"simulate exited {code}")
            with open(out, encoding="utf-8") as handle:
                summary = json.load(handle)["summary"]
            if summary["pods"] != count or summary["unschedulable"]:
                raise SystemExit(f"unexpected summary {summary}")
    return statistics.median(times), statistics.median(cpu)


def e2e_process(count: int, repeat: int) -> tuple[float, float]:
    """(median wall, median child CPU seconds) of `python -m provisioner simulate ... -o json` as a
    process writing to a pipe (interpreter start and imports included), the way a user runs it."""
    import resource
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        manifests, catalog = _write_inputs(tmp, count)
        command = [sys.executable, "-m", "provisioner", "simulate", "-f", manifests, "--catalog", catalog, "-o", "json"]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository root
        walls, cpus = [], []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            with subprocess.Popen(command, stdout=subprocess.PIPE, cwd=root) as child:
                size = sum(len(chunk) for chunk in iter(lambda: child.stdout.read(1 << 16), b""))
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if child.returncode != 0 or size == 0:
                raise SystemExit(f"simulate exited {child.returncode}")
    return statistics.median(walls), statistics.median(cpus)


# The steps of `simulate -o json` (commands/simulate.py) with a CPU-time mark after each, run in a
# fresh interpreter so start-up and imports count as they do for a user.
_PHASES = """
import gc, json, sys, time
marks = [time.process_time()]
import provisioner.cli, provisioner.commands.simulate
from provisioner.api import simulate_inputs
from provisioner.catalog import load_catalog_file
from provisioner.loader import load_objects
from provisioner.manifests import manifest_limits, read_paths
from provisioner.report import render_json
marks.append(time.process_time())
gc.disable()
objects, origins = read_paths([sys.argv[1]], manifest_limits(100000))
marks.append(time.process_time())
inputs = load_objects(objects, origins)
marks.append(time.process_time())
result = simulate_inputs(inputs, catalog=load_catalog_file(sys.argv[2]))
marks.append(time.process_time())
sys.stdout.write(render_json(result))
sys.stdout.flush()
marks.append(time.process_time())
print(json.dumps(marks), file=sys.stderr)
gc.freeze()
"""
PHASE_NAMES = ("interpreter start", "imports", "YAML", "loading (objects to pods)", "solve (catalog, scheduler, rounds)",
               "encoding and writing", "exit")


def e2e_phases(count: int, repeat: int) -> dict:
    """{phase: median CPU seconds} of the steps of `simulate -o json` in a fresh process writing to
    a pipe (PHASE_NAMES; "exit" is the child's CPU after its last mark)."""
    import resource
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        manifests, catalog = _write_inputs(tmp, count)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository root
        runs = []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            with subprocess.Popen([sys.executable, "-c", _PHASES, manifests, catalog], cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
                for _chunk in iter(lambda: child.stdout.read(1 << 16), b""):
                    pass
                marks = json.loads(child.stderr.read().decode().strip().splitlines()[-1])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            total = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            runs.append([marks[0]] + [b - a for a, b in zip(marks, marks[1:])] + [max(total - marks[-1], 0.0)])
    return {name: statistics.median(run[i] for run in runs) for i, name in enumerate(PHASE_NAMES)}


def solve(sizes, repeat: int) -> list:
    types, pool = synthetic.instance_types(), synthetic.nodepool()
    rows = []
    for size in sizes:
        pods = synthetic.diverse_pods(size)
        times = []
        for _ in range(repeat):
            start = time.process_time()
            Scheduler([(pool, types)]).solve(pods)
            times.append(time.process_time() - start)
        rows.append((size, statistics.median(times)))
    return rows


def many_pools_objects(pools: int = 200, pods: int = 400, seed: int = 7) -> list:
    """200 team NodePools in the shapes the presets produce (varied categories, caps, capacity
    types, zones), two DaemonSets and a few hundred pending pods selecting teams."""
    rng = random.Random(seed)
    objects = [{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-bench",
                      "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                      "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]}}]
    categories = (["c", "m", "r"], ["c", "m"], ["m", "r"], ["c"], ["m"])
    caps = (None, "17", "33", "65")
    for i in range(pools):
        reqs = [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": rng.choice(categories)},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": [rng.choice(["2", "4", "5"])]},
                {"key": "karpenter.sh/capacity-type", "operator": "In",
                 "values": rng.choice([["on-demand"], ["spot", "on-demand"], ["spot"]])},
                {"key": "kubernetes.io/arch", "operator": "In", "values": [rng.choice(["amd64", "arm64"])]}]
        cap = rng.choice(caps)
        if cap:
            reqs.append({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": [cap]})
        objects.append({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": f"team{i}-pool"},
                        "spec": {"weight": rng.randint(0, 50), "limits": {"cpu": "1000", "memory": "4000Gi"},
                                 "template": {"metadata": {"labels": {"karpenter-platform.io/team": f"team{i}"}},
                                              "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                                                        "kind": "EC2NodeClass", "name": "default"},
                                                       "requirements": reqs}}}})
    for name in ("node-exporter", "fluent-bit"):
        objects.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "kube-system"},
                        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": {"tolerations": [{"operator": "Exists"}], "containers": [
                                {"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}})
    for i in range(pods):
        team = f"team{rng.randrange(pools)}"
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                        "spec": {"nodeSelector": {"karpenter-platform.io/team": team}, "containers": [
                            {"name": "c", "image": "i",
                             "resources": {"requests": {"cpu": rng.choice(["250m", "1", "2"]),
                                                        "memory": rng.choice(["512Mi", "2Gi", "4Gi"])}}}]}})
    return objects


def advisor(repeat: int) -> float:
    from provisioner.controller.catalog import CatalogHolder
    from provisioner.controller.core import load_bundled, make_plan
    objects = many_pools_objects()
    holder = CatalogHolder(None, load_bundled, lambda choice: None)
    holder.start(time.time())  # the bundled catalog, loaded once per process as in the advisor
    plan = make_plan(holder, "us-east-1")
    times = []
    for _ in range(repeat):
        start = time.process_time()
        plan(objects)
        times.append(time.process_time() - start)
    return statistics.median(times)


def policy_stack(pools: int = 200):
    """A policy Stack as the offline render would hold it: one NodeClass and 200 NodePools."""
    from policies.model import NODECLASS, NODEPOOL, Resource, Stack
    resources = []
    for obj in many_pools_objects(pools, 0):
        if obj["kind"] not in ("NodePool", "EC2NodeClass"):
            continue
        kind = NODEPOOL if obj["kind"] == "NodePool" else NODECLASS
        obj = dict(obj)
        if kind == NODEPOOL:
            obj["metadata"] = {**obj["metadata"], "annotations": {"karpenter-platform.io/owner": "x"}}
        resources.append(Resource(type=kind, name=obj["metadata"]["name"], urn=f"urn::{obj['metadata']['name']}",
                                  props=obj))
    return Stack("prod", tuple(resources))


def policies(repeat: int) -> float:
    from policies.engine import evaluate
    from provisioner.catalog import shipped_catalog
    shipped_catalog()
    stack = policy_stack()
    times = []
    for _ in range(repeat):
        from policies import catalog
        catalog._pool_types.cache_clear()  # a fresh `python -m policies.check` run
        getattr(catalog, "_CANDIDATES", {}).clear()
        from provisioner.scheduling import instance_selection  # and the shared type tables: nothing warm but the catalog
        instance_selection.forget_tables()
        start = time.process_time()
        evaluate(stack, {})
        times.append(time.process_time() - start)
    return statistics.median(times)


def run(out=sys.stdout, repeat: int = 3, e2e_pods: int = 20000, sizes=(20000, 50000)) -> None:
    """Figures in CPU seconds (`time.process_time`, medians): on a machine shared with other jobs
    they move far less than wall time; the end-to-end row gives both."""
    import math
    wall, cpu = e2e(e2e_pods, repeat)
    print(f"Load average {os.getloadavg()[0]:.1f}; CPU seconds unless marked wall.\n", file=out)
    print("| measure | figure | target |", file=out)
    print("|---|---:|---|", file=out)
    print(f"| simulate -o json, {e2e_pods:,} pods (benchmark shape), end to end | {cpu:.2f} s CPU, {e2e_pods / cpu:,.0f} "
          f"pods/s (wall {wall:.2f} s, {e2e_pods / wall:,.0f} pods/s) | >= 8,000 pods/s |", file=out)
    wall, cpu = e2e_process(e2e_pods, repeat)
    print(f"| the same as a process (`python -m provisioner simulate ... -o json`, stdout a pipe, start-up "
          f"included) | {cpu:.2f} s CPU, {e2e_pods / cpu:,.0f} pods/s (wall {wall:.2f} s, {e2e_pods / wall:,.0f} pods/s) "
          f"| >= 8,000 pods/s |", file=out)
    phases = e2e_phases(e2e_pods, repeat)
    print("| where a process run's CPU goes (medians) | "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())
          + f" (sum {sum(phases.values()):.2f} s) | |", file=out)
    rows = solve(sizes, repeat)
    for size, t in rows:
        print(f"| solve, {size:,} pods | {t:.2f} s ({size / t:,.0f} pods/s) | |", file=out)
    if len(rows) > 1:
        (s0, t0), (s1, t1) = rows[0], rows[-1]
        print(f"| solve time growth {s0:,} -> {s1:,} | exponent {math.log(t1 / t0) / math.log(s1 / s0):.2f} "
              f"| 1.0 (linear) |", file=out)
    print(f"| advisor plan, 200 NodePools, 400 pods | {advisor(repeat):.2f} s | < 0.5 s |", file=out)
    print(f"| policies evaluate, 200 NodePools | {policies(repeat):.2f} s | < 1 s |", file=out)
