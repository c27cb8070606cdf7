"""A consolidation simulation that only needs to know whether it gives a command ends as soon as
it cannot (simulation._Hopeless): computeConsolidation (kubernetes-sigs/karpenter
pkg/controllers/disruption/consolidation.go) refuses a candidate whose pods land on a node not yet
initialized, that needs more than one new NodeClaim, or whose one NodeClaim keeps no option
cheaper than the candidate (RemoveInstanceTypeOptionsByPriceAndMinValues,
pkg/controllers/provisioning/scheduling/nodeclaim.go). Ending early never changes the command."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from provisioner.api import disruption_pass, load_cluster
from provisioner.disruption import simulation
from provisioner.disruption.bench import cluster as bench_cluster
from provisioner.models import InstanceType, Offering
from provisioner.scheduling.instance_selection import TypeTable
from kubefacts import labels as L
from provisioner.scheduling.requirements import Requirement, Requirements
from tests.provisioner.disruption_builders import TYPES, bound, knode, nodeclaim, pool
from tests.provisioner.prov_builders import ZONES, catalog, nodeclass, pod


def _commands(result) -> list:
    return [c.to_dict() for c in result.commands]


def _both(objects: list, **kwargs) -> tuple[list, list, list]:
    """(commands explaining, commands not explaining, why each abandoned simulation ended)."""
    cluster = load_cluster([pool(after="0s"), nodeclass(), *objects])
    ended: list = []
    original = simulation.Simulator.run

    def spy(self, candidates, consolidation=True, ceiling=None):
        sim = original(self, candidates, consolidation, ceiling)
        if sim.abandoned:
            ended.append(sim.abandoned)
        return sim
    simulation.Simulator.run = spy  # type: ignore[method-assign]
    try:
        full = disruption_pass(cluster, catalog=catalog(*TYPES), zones=ZONES, **kwargs)
        quick = disruption_pass(cluster, catalog=catalog(*TYPES), zones=ZONES, explain=False, **kwargs)
    finally:
        simulation.Simulator.run = original  # type: ignore[method-assign]
    return _commands(full), _commands(quick), ended


def test_a_replacement_no_cheaper_than_the_node_ends_the_simulation():
    full, quick, ended = _both([knode("n", "c.large"), nodeclaim("claim-n", "n"), bound("web-0", "n", cpu="1")])
    assert full == quick == []
    assert ended == ["no cheaper replacement exists for $0.0800/h"]


def test_a_second_new_nodeclaim_ends_the_simulation():
    # Two pods of 3.5 CPU each need two m.xlarge (3.92 CPU): the m.2xlarge is replaced by at most one.
    objs = [knode("n", "m.2xlarge"), nodeclaim("claim-n", "n"),
            bound("web-0", "n", cpu="3500m", memory="1Gi", node_selector={"node.kubernetes.io/instance-type": "m.xlarge"}),
            bound("web-1", "n", cpu="3500m", memory="1Gi", node_selector={"node.kubernetes.io/instance-type": "m.xlarge"})]
    full, quick, ended = _both(objs)
    assert full == quick == []
    assert ended == ["removing it would need more than one new node; consolidation replaces with at most one"]


def test_a_candidate_pod_on_a_node_not_yet_initialized_ends_the_simulation():
    objs = [knode("old", "m.2xlarge"), nodeclaim("claim-old", "old"), bound("web-0", "old", cpu="1"),
            knode("new", "m.2xlarge", initialized=False), nodeclaim("claim-new", "new", consolidatable=False)]
    full, quick, ended = _both(objs)
    assert full == quick == []
    assert ended == ["its pods would move to node new, which is not initialized yet"]


def test_a_command_is_found_the_same_when_simulations_end_early():
    objs = [knode("big", "m.4xlarge"), nodeclaim("claim-big", "big"), bound("web-0", "big", cpu="1", memory="2Gi"),
            knode("small", "c.large"), nodeclaim("claim-small", "small"), bound("api-0", "small", cpu="1")]
    full, quick, ended = _both(objs)
    assert full == quick
    assert [(c["method"], c["decision"], c["candidates"], [r["instance_type"] for r in c["replacements"]])
            for c in quick] == [("single-node", "replace", ["big"], ["c.large"])]


def test_a_replacement_a_fifth_cheaper_is_still_found():
    full, quick, ended = _both([knode("n", "m.large"), nodeclaim("claim-n", "n"), bound("web-0", "n", cpu="1")])
    assert full == quick and [r["instance_type"] for r in quick[0]["replacements"]] == ["c.large"]
    assert ended == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(layout=[("m.large", True, ["1"])], pending=[], spot=False)
@example(layout=[("m.xlarge", True, ["1", "1"]), ("m.large", True, ["500m"])], pending=["500m"], spot=False)
@given(layout=st.lists(st.tuples(st.sampled_from(["c.large", "m.large", "m.xlarge", "m.2xlarge", "m.4xlarge"]),
                                 st.booleans(),
                                 st.lists(st.sampled_from(["250m", "500m", "1", "1500m", "3"]), max_size=5)),
                       min_size=1, max_size=6),
       pending=st.lists(st.sampled_from(["500m", "2", "6"]), max_size=3), spot=st.booleans())
def test_ending_simulations_early_never_changes_the_pass(layout, pending, spot):
    objs: list = []
    for i, (itype_name, initialized, cpus) in enumerate(layout):
        objs += [knode(f"n{i}", itype_name, initialized=initialized, capacity_type="spot" if spot else "on-demand"),
                 nodeclaim(f"claim-n{i}", f"n{i}")]
        objs += [bound(f"p{i}-{j}", f"n{i}", cpu=c, memory="1Gi") for j, c in enumerate(cpus)]
    objs += [pod(f"pending-{k}", cpu=c, memory="1Gi") for k, c in enumerate(pending)]
    full, quick, _ = _both(objs, spot_to_spot=spot)
    assert quick == full


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(2, 10), fill=st.sampled_from([0.3, 0.6, 0.9]), seed=st.integers(0, 99))
def test_ending_simulations_early_never_changes_the_pass_on_bench_clusters(nodes, fill, seed):
    cluster = load_cluster(bench_cluster(nodes, fill, seed))
    assert _commands(disruption_pass(cluster, explain=False)) == _commands(disruption_pass(cluster))


@given(prices=st.lists(st.lists(st.tuples(st.sampled_from(["z1", "z2"]), st.sampled_from(["spot", "on-demand"]),
                                         st.floats(0.001, 10), st.booleans()), max_size=4), min_size=1, max_size=6),
       zones=st.sampled_from([("z1",), ("z2",), ("z1", "z2")]), cts=st.sampled_from([("spot",), ("on-demand",)]))
def test_price_floor_is_each_types_cheapest_available_offering_allowed(prices, zones, cts):
    types = [InstanceType(f"t{i}", Requirements(), {"cpu": 1000}, {},
                          [Offering(z, ct, p, available) for z, ct, p, available in offers])
             for i, offers in enumerate(prices)]
    expected = [min((p for z, ct, p, available in offers if available and z in zones and ct in cts), default=math.inf)
                for offers in prices]
    floor = TypeTable(types).price_floor(Requirement.in_(L.ZONE, *zones), Requirement.in_(L.CAPACITY_TYPE, *cts))
    assert np.array_equal(floor, np.array(expected))
