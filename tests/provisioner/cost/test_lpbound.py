"""The LP lower bounds of provisioner.cost.lpbound checked against brute force on small cases.

A lower bound must never exceed the cheapest plan any scheduler could make: the brute force
below enumerates every way to put the pods on whole nodes (each node of one instance type,
holding whole pods within its allocatable) and takes the cheapest. The pattern (configuration)
LP must lie between the fluid LP and that optimum, also when column generation is stopped early
(Farley's bound), and Karpenter's simulated plan must lie above it.
"""
import functools
import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from provisioner import catalog_from_dict, load_objects, simulate_inputs
from provisioner.catalog.instancetypes import build_instance_types
from provisioner.cost.lpbound import lower_bound
from provisioner.models import NodeClass

from tests.provisioner.prov_builders import deployment, itype, node, nodeclass, nodepool, pod, taint, term

pytest.importorskip("scipy")

ZONE = ("test-zone-1",)


def catalog(*types):
    return catalog_from_dict({"instance_types": list(types)})


def brute_force(cat, shapes):
    """Cheapest price of whole nodes holding every pod. shapes: [(cpu milli, memory GiB, replicas)]."""
    types = build_instance_types(cat.types, NodeClass("default"), ZONE, "test-region", 0.5)
    nodes = [((it.allocatable["cpu"], it.allocatable["memory"], it.allocatable["pods"]),
              min(o.price for o in it.offerings)) for it in types]
    sizes = [(cpu, gib * 2**30 * 1000, 1000) for cpu, gib, _ in shapes]

    def cheapest_node(take):
        load = [sum(t * s[r] for t, s in zip(take, sizes)) for r in range(3)]
        prices = [p for alloc, p in nodes if all(load[r] <= alloc[r] for r in range(3))]
        return min(prices) if prices else None

    @functools.lru_cache(maxsize=None)
    def best(left):
        if not any(left):
            return 0.0
        out = float("inf")
        for take in itertools.product(*(range(n + 1) for n in left)):
            if any(take) and (price := cheapest_node(take)) is not None:
                out = min(out, price + best(tuple(n - t for n, t in zip(left, take))))
        return out

    return best(tuple(n for *_, n in shapes))


def inputs_for(shapes, extra=()):
    objs = [nodeclass(), nodepool(requirements=[("karpenter.sh/capacity-type", "In", "on-demand")])]
    objs += [deployment(f"app{i}", replicas=n, cpu=f"{cpu}m", memory=f"{gib}Gi") for i, (cpu, gib, n) in enumerate(shapes)]
    return load_objects(objs + list(extra))


def test_pattern_bound_counts_whole_pods_per_node():
    """Three 2-CPU pods on 4-vCPU nodes (3.92 allocatable cores): two never share a node, so every
    plan buys three nodes; the fluid bound charges 6 / 3.92 nodes."""
    cat = catalog(itype("m5.xlarge", 4, 16, price=1.0, capacity_types=("on-demand",)))
    inputs = inputs_for([(2000, 1, 3)])
    patterns = lower_bound(inputs, cat, zones=ZONE)
    fluid = lower_bound(inputs, cat, zones=ZONE, method="fluid")
    assert patterns.price_usd_hour == pytest.approx(3.0, rel=1e-6)
    assert patterns.fluid_usd_hour == pytest.approx(fluid.price_usd_hour)
    assert fluid.price_usd_hour < 1.6
    assert brute_force(cat, [(2000, 1, 3)]) == pytest.approx(3.0)
    assert patterns.converged and patterns.method == "patterns"


def test_pattern_bound_puts_pods_that_repel_each_other_on_separate_nodes():
    """Required pod anti-affinity on the hostname matching the pod's own labels: one per node."""
    cat = catalog(itype("m5.xlarge", 4, 16, price=1.0, capacity_types=("on-demand",)))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term("kubernetes.io/hostname", {"app": "db"})]}}
    objs = [nodeclass(), nodepool(requirements=[("karpenter.sh/capacity-type", "In", "on-demand")]),
            deployment("db", replicas=4, cpu="100m", memory="128Mi", extra={"affinity": anti})]
    inputs = load_objects(objs)
    assert lower_bound(inputs, cat, zones=ZONE).price_usd_hour == pytest.approx(4.0, rel=1e-6)
    assert lower_bound(inputs, cat, zones=ZONE, method="fluid").price_usd_hour < 0.2
    assert simulate_inputs(inputs, cat, zones=ZONE).price_usd_hour == pytest.approx(4.0)


def test_unknown_method_is_refused():
    cat = catalog(itype("m5.xlarge", 4, 16, price=1.0, capacity_types=("on-demand",)))
    with pytest.raises(ValueError, match="patterns, fluid"):
        lower_bound(inputs_for([(1000, 1, 1)]), cat, zones=ZONE, method="exact")


shape = st.tuples(st.sampled_from([250, 500, 1000, 1500, 2000, 3000]), st.sampled_from([1, 2, 3, 6, 12]),
                  st.integers(1, 3))
node_type = st.tuples(st.sampled_from([2, 4, 8]), st.sampled_from([2, 4, 8]),
                      st.floats(0.05, 2.0, allow_nan=False).map(lambda p: round(p, 3)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(shape, min_size=1, max_size=3), kinds=st.lists(node_type, min_size=1, max_size=3),
       iterations=st.sampled_from([1, 2, 60]))
@pytest.mark.slow
def test_bounds_never_exceed_the_cheapest_whole_node_plan(shapes, kinds, iterations):
    """fluid <= patterns <= brute-force optimum <= Karpenter's plan, for small random cases, also
    when column generation stops after one or two rounds (Farley's bound); the whole-node packing
    over the patterns is a real packing, so it costs at least the optimum."""
    types = [itype(f"m{5 + i}.t{i}", cpu, cpu * ratio, price=price, capacity_types=("on-demand",))
             for i, (cpu, ratio, price) in enumerate(kinds)]
    cat = catalog(*types)
    inputs = inputs_for(shapes)
    fluid = lower_bound(inputs, cat, zones=ZONE, method="fluid").price_usd_hour
    bound = lower_bound(inputs, cat, zones=ZONE, max_iterations=iterations, packing=True)
    optimum = brute_force(cat, shapes)
    plan = simulate_inputs(inputs, cat, zones=ZONE)
    if optimum == float("inf"):  # some pod fits no type: the bound covers the placeable pods only
        return
    assert fluid <= bound.price_usd_hour + 1e-9
    assert bound.price_usd_hour <= optimum * (1 + 1e-6) + 1e-9
    assert optimum <= bound.packing_usd_hour * (1 + 1e-6) + 1e-9  # a real packing costs at least the optimum
    if not plan.unschedulable:
        assert optimum <= plan.price_usd_hour + 1e-9


NODE_LABELS = {"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "m5.xlarge",
               "topology.kubernetes.io/zone": "test-zone-1", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
               "karpenter.sh/capacity-type": "on-demand"}


def existing_case(taints=()):
    cat = catalog(itype("m5.xlarge", 4, 16, price=1.0, capacity_types=("on-demand",)))
    objs = [nodeclass(), nodepool(requirements=[("karpenter.sh/capacity-type", "In", "on-demand")]),
            deployment("app", replicas=3, cpu="1500m", memory="1Gi"),
            node("n1", labels=NODE_LABELS, allocatable={"cpu": "4", "memory": "16Gi", "pods": "110"}, taints=taints)]
    return cat, load_objects(objs)


def test_room_on_existing_nodes_is_free_so_the_bound_stays_below_the_plan():
    """A plan pays nothing for pods on an existing node (api.plan_pools prices new NodeClaims only):
    two of three 1.5-CPU pods fit the existing 4-CPU node, the third needs one new node."""
    cat, inputs = existing_case()
    plan = simulate_inputs(inputs, cat, zones=ZONE)
    assert plan.price_usd_hour == pytest.approx(1.0) and len(plan.nodeclaims) == 1
    patterns = lower_bound(inputs, cat, zones=ZONE)
    fluid = lower_bound(inputs, cat, zones=ZONE, method="fluid")
    assert 0 < fluid.price_usd_hour <= patterns.price_usd_hour <= plan.price_usd_hour
    assert all(pool == "default" for pool, _, _ in patterns.carriers)  # existing nodes carry nothing billable


def test_a_tainted_existing_node_gives_no_room_to_pods_that_do_not_tolerate_it():
    cat, inputs = existing_case(taints=[taint("dedicated", "db")])
    assert simulate_inputs(inputs, cat, zones=ZONE).price_usd_hour == pytest.approx(2.0)
    assert lower_bound(inputs, cat, zones=ZONE).price_usd_hour == pytest.approx(1.5, rel=1e-6)  # 2 pods per node


def test_solver_output_on_file_descriptor_1_is_kept_out_of_stdout(capfd):
    """HiGHS's MIP solver may print debug lines to fd 1 itself; `tune -o json` must stay JSON."""
    import os

    from provisioner.cost.patterns import _quiet
    with _quiet():
        os.write(1, b"HighsMipSolverData::noise\n")
    print("kept")
    assert capfd.readouterr().out == "kept\n"


def test_allow_list_evidence_search_never_reports_a_dearer_or_less_complete_plan():
    from bench.presets import allow_lists
    baseline, best, chosen, plans = allow_lists("memory-heavy", exhaustive=1)
    assert 0 < best <= baseline and plans > 1
    assert chosen == () or best < baseline


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(shape, min_size=1, max_size=3), kinds=st.lists(node_type, min_size=1, max_size=2),
       room=st.tuples(st.sampled_from(["1", "2", "4", "8"]), st.sampled_from(["2Gi", "8Gi", "32Gi"])),
       busy=st.sampled_from([0, 500, 1500]))
@pytest.mark.slow
def test_bounds_stay_below_the_plan_when_existing_nodes_have_room(shapes, kinds, room, busy):
    """With an existing node (partly used by a bound pod), Karpenter's plan pays only for new
    NodeClaims; both bounds must stay below it."""
    types = [itype(f"m{5 + i}.t{i}", cpu, cpu * ratio, price=price, capacity_types=("on-demand",))
             for i, (cpu, ratio, price) in enumerate(kinds)]
    cat = catalog(*types)
    objs = [nodeclass(), nodepool(requirements=[("karpenter.sh/capacity-type", "In", "on-demand")]),
            node("n1", labels=NODE_LABELS, allocatable={"cpu": room[0], "memory": room[1], "pods": "110"})]
    objs += [deployment(f"app{i}", replicas=n, cpu=f"{cpu}m", memory=f"{gib}Gi") for i, (cpu, gib, n) in enumerate(shapes)]
    if busy:
        objs.append(pod("running", node_name="n1", cpu=f"{busy}m", memory="1Gi"))
    inputs = load_objects(objs)
    plan = simulate_inputs(inputs, cat, zones=ZONE)
    if plan.unschedulable:
        return
    fluid = lower_bound(inputs, cat, zones=ZONE, method="fluid").price_usd_hour
    patterns = lower_bound(inputs, cat, zones=ZONE).price_usd_hour
    assert fluid <= patterns + 1e-9
    assert patterns <= plan.price_usd_hour * (1 + 1e-6) + 1e-9


def test_tune_reports_a_bound_below_its_plans_when_existing_nodes_have_room():
    from provisioner.cost.tune import tune
    cat, inputs = existing_case()
    result = tune(inputs, catalog=cat, zones=ZONE)
    assert 0 < result.bound_usd_hour <= result.tuned.price_usd_hour <= result.baseline.price_usd_hour
