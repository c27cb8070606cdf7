"""The in-flight scan's shortcuts give exactly the plan of scanning every NodeClaim every time.

Karpenter tries in-flight NodeClaims fewest pods first for every pod (sigs.k8s.io/karpenter
pkg/controllers/provisioning/scheduling/scheduler.go `add`, which sorts `newNodeClaims` by pod count
before each pod; scheduling_benchmark_test.go is the workload shape used here). The scheduler skips
NodeClaims it knows reject a pod shape (a resume point per shape), caches fitting options,
envelopes and launch limits per option set, and skips limits every type fits under; none of that
may change which NodeClaim a pod lands on.
"""
import random
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kubefacts import labels as L
from bench import synthetic
from provisioner.models import NodeClassRef, NodePool
from kubefacts.quantity import milli as parse
from provisioner.scheduling import inflight
from provisioner.scheduling.instance_selection import Template
from provisioner.scheduling.scheduler import Scheduler

from tests.provisioner.prov_builders import daemonset, deployment, node, nodeclass, nodepool, run, spread, taint, term


def _plan(pods, pool=None):
    result = Scheduler([(pool or synthetic.nodepool(), synthetic.instance_types(60))]).solve(pods)
    return ([(nc.instance_type.name, nc.offering.zone, [p.name for p in nc.pods], nc.options, sorted(nc.labels.items()))
             for nc in result.nodeclaims], sorted((p.name, e) for p, e in result.errors.items()))


def _mixed_pods(seed: int, size: int, preferences: int) -> list:
    """Karpenter's benchmark groups (plain, zonal and hostname spread, zonal affinity, hostname
    anti-affinity) and preference pods, shuffled so shapes interleave and runs break up."""
    rng = random.Random(seed)
    pods = synthetic.diverse_pods(size, seed=seed) + synthetic.preference_pods(preferences, seed=seed)
    rng.shuffle(pods)
    return pods


@contextmanager
def _full_scans():
    """Every scan starts at the first NodeClaim in the order, masks it with numpy and trusts no
    rejection "for now" from an earlier scan (only rejections for good)."""
    sequence, head, state = inflight.InflightClaims._sequence, inflight._HEAD, inflight.InflightClaims.state
    direct = inflight._DIRECT

    def fresh_state(self, variant):
        found = state(self, variant)
        found[5] += inflight._EPOCH  # a new epoch: earlier rejections for now no longer match
        found[3], found[4] = False, None
        return found

    inflight.InflightClaims._sequence = lambda self, _state: self.order
    inflight.InflightClaims.state = fresh_state
    inflight._HEAD = 0
    inflight._DIRECT = 0  # a lone NodeClaim too goes through the masks
    try:
        yield
    finally:
        inflight.InflightClaims._sequence, inflight._HEAD, inflight.InflightClaims.state = sequence, head, state
        inflight._DIRECT = direct


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(5, 250), preferences=st.integers(0, 40))
@pytest.mark.slow
def test_inflight_shortcuts_give_the_plan_of_a_full_scan(seed, size, preferences):
    pods = _mixed_pods(seed, size, preferences)
    fast = _plan(pods)
    with _full_scans():
        full = _plan(pods)
    assert fast == full


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(2, 30), preferences=st.integers(0, 6))
def test_a_lone_nodeclaim_proposed_to_directly_gives_the_plan_of_the_masked_scan(seed, size, preferences):
    """Few pods make one or two NodeClaims (a consolidation simulation ends at the second):
    proposing to the lone one directly places what the masked scan places."""
    pods = _mixed_pods(seed, size, preferences)
    fast = _plan(pods)
    with _full_scans():
        full = _plan(pods)
    assert fast == full


def test_inflight_resume_point_skips_nodeclaims_that_rejected_the_shape():
    """Hostname anti-affinity pods: after the first scan every NodeClaim holds one, so later pods
    of the shape look only at NodeClaims created or committed to since."""
    pods = [p for p in synthetic.diverse_pods(2000) if p.spec.anti_affinity]
    scheduler = Scheduler([(synthetic.nodepool(), synthetic.instance_types(60))])
    looked = []
    original = inflight.InflightClaims._sequence

    def spy(self, state):
        seq = original(self, state)
        looked.append((len(seq), len(self.order)))
        return seq

    inflight.InflightClaims._sequence = spy
    try:
        result = scheduler.solve(pods)
    finally:
        inflight.InflightClaims._sequence = original
    assert len(result.nodeclaims) == len(pods) == 400  # one node per pod, as anti-affinity demands
    seen, total = sum(s for s, _ in looked), sum(t for _, t in looked)
    assert total > 50_000  # a full scan per pod would look at every open NodeClaim
    assert seen * 4 < total


def _template(limits: dict) -> Template:
    pool = NodePool("capped", NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default"), limits=limits)
    return Template(pool, synthetic.instance_types(40), (L.CPU, L.MEMORY, L.PODS), (), 0)


def test_within_limits_returns_every_option_when_limits_exceed_the_largest_type():
    tpl = _template({L.CPU: parse("1000")})
    assert tpl.within_limits(tpl.all, {L.CPU: parse("1000")}) is tpl.all


def test_within_limits_drops_types_larger_than_what_is_left():
    tpl = _template({L.CPU: parse("1000")})
    kept = tpl.within_limits(tpl.all, {L.CPU: parse("8")})
    assert [tpl.types[i].name for i in kept.tolist()] == [f"fake-it-{i}" for i in range(8)]  # 1..8 vCPU


@settings(max_examples=25, deadline=None)
@given(cpu=st.integers(0, 45_000), memory_gib=st.integers(0, 90), start=st.integers(0, 39))
def test_cached_fitting_and_envelope_equal_a_fresh_computation(cpu, memory_gib, start):
    tpl = _template({})
    options = tpl.all[start:]
    total = [cpu, memory_gib * 2**30 * 1000, 1000]
    expected = options[(tpl.alloc[options] >= np.asarray(total)).all(axis=1)]
    first, again = tpl.fitting(options, total), tpl.fitting(options.copy(), total)
    assert first.tolist() == again.tolist() == expected.tolist()
    assert not first.flags.writeable  # shared between NodeClaims: nobody may change it in place
    if len(expected):
        alloc = tpl.alloc[expected]
        assert tpl.envelope(expected) == (tuple(alloc.max(axis=0).tolist()), tuple(alloc.min(axis=0).tolist()))
        assert tpl.envelope(expected.copy()) == tpl.envelope(expected)


def test_bench_only_throughput_runs_the_sizes_given(capsys):
    """`python -m bench --only throughput --sizes ...` (the command BENCHMARKS.md part a
    records) runs those sizes and reports CPU seconds next to wall seconds."""
    from bench.__main__ import main
    assert main(["--only", "throughput", "--sizes", "40,80", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in rows] == ["| 40", "| 80"]
    header = next(line for line in lines if line.startswith("| pods |"))
    assert header.endswith("| CPU seconds (median) | pods/s (CPU) |")  # wall time moves with the load
    assert all(float(row.split(" | ")[-1].rstrip(" |").replace(",", "")) > 0 for row in rows)


def _cluster_objects(seed: int) -> list:
    """Several NodePools (weights, a limit, a taint), an existing node, a DaemonSet and Deployments
    with zonal and hostname spread, zonal affinity, hostname anti-affinity and preferences."""
    rng = random.Random(seed)
    zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
    objs = [nodeclass(), nodepool("general", weight=10, limits={"cpu": str(rng.choice([24, 200]))}),
            nodepool("tainted", weight=20, taints=[taint("dedicated", "x")]), nodepool("spare"),
            daemonset(cpu="100m", memory="128Mi"), node("existing", allocatable={"cpu": "3", "memory": "6Gi", "pods": "20"})]
    for i in range(rng.randint(3, 9)):
        kind = rng.choice(["plain", "zspread", "hspread", "affinity", "anti", "preferred", "tolerating"])
        labels = {"app": f"a{rng.randint(0, 3)}"}
        extra = {"plain": {}, "zspread": {"spread": [spread(zone, labels=labels)]},
                 "hspread": {"spread": [spread(host, max_skew=2, labels=labels)]},
                 "affinity": {"affinity": [term(zone, labels=labels)]},
                 "anti": {"anti_affinity": [term(host, labels=labels)]},
                 "preferred": {"anti_preferred": [(10, term(zone, labels=labels))]},
                 "tolerating": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}[kind]
        objs.append(deployment(f"d{i}", replicas=rng.randint(1, 25), labels=labels,
                               cpu=rng.choice(["100m", "250m", "500m", "1", "2"]),
                               memory=rng.choice(["128Mi", "512Mi", "1Gi", "3Gi"]), **extra))
    return objs


def _cluster_plan(objs):
    result = run(*objs)
    return [(nc.nodepool, nc.instance_type, nc.zone, nc.pods) for nc in result.nodeclaims], \
        sorted((u.pod, u.reason) for u in result.unschedulable), result.existing


@pytest.mark.parametrize("seed", range(8))
def test_inflight_shortcuts_give_the_plan_of_a_full_scan_on_cluster_inputs(seed):
    objs = _cluster_objects(seed)
    fast = _cluster_plan(objs)
    with _full_scans():
        full = _cluster_plan(objs)
    assert fast == full
    assert fast[0]  # something was planned
