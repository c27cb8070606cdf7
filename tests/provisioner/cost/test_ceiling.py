"""Worst-case $/h of a NodePool at its limits, the single-write JSON output, shared instance-type
tables and the garbage collector around a solve."""
import gc
import json

import pytest

from provisioner import load_objects
from provisioner.api import nodepool_instance_types, resolve_catalog
from provisioner.cost.ceiling import pool_ceilings, team_totals
from provisioner.report import render_json
from provisioner.scheduling import instance_selection
from provisioner.scheduling.instance_selection import Template
from provisioner.scheduling.scheduler import Scheduler

from tests.provisioner.prov_builders import daemonset, deployment, nodeclass, nodepool, run

TEAM = "karpenter-platform.io/team"
M5 = ("node.kubernetes.io/instance-type", "In", "m5.large", "m5.xlarge", "m5.2xlarge")


def test_worst_case_is_the_tightest_limit_times_the_dearest_price_per_unit():
    # m5.large/xlarge/2xlarge cost $0.048/vCPU-h and $0.012/GiB-h on demand: 16 vCPU -> $0.768/h,
    # 256 GiB -> $3.072/h; the cpu limit is the tighter one.
    pool = nodepool("web-api", [M5, ("karpenter.sh/capacity-type", "In", "on-demand")], labels={TEAM: "web"},
                    limits={"cpu": "16", "memory": "256Gi"})
    [ceiling] = pool_ceilings([pool, nodeclass()])
    assert (ceiling.nodepool, ceiling.team, ceiling.limiting) == ("web-api", "web", "cpu")
    assert ceiling.usd_hour == pytest.approx(16 * 0.096 / 2)


def test_node_limit_bounds_spend_by_the_dearest_type():
    pool = nodepool("p", [M5, ("karpenter.sh/capacity-type", "In", "on-demand")], limits={"nodes": "3"})
    [ceiling] = pool_ceilings([pool, nodeclass()])
    assert (ceiling.limiting, ceiling.instance_type) == ("nodes", "m5.2xlarge")
    assert ceiling.usd_hour == pytest.approx(3 * 0.384)


def test_pool_without_limits_is_unbounded_and_so_is_its_team():
    ceilings = pool_ceilings([nodepool("a", [M5], labels={TEAM: "t"}),
                              nodepool("b", [M5], labels={TEAM: "t"}, limits={"cpu": "4"}), nodeclass()])
    assert [c.usd_hour is None for c in ceilings] == [True, False]
    assert team_totals(ceilings) == {"t": None}


def test_gpu_limit_does_not_bound_a_pool_that_allows_cpu_only_types():
    pool = nodepool("p", [("karpenter.k8s.aws/instance-family", "In", "m5", "g5")],
                    limits={"nvidia.com/gpu": "1", "cpu": "8"})
    [ceiling] = pool_ceilings([pool, nodeclass()])
    assert ceiling.limiting == "cpu"


def test_json_output_is_the_same_document_as_to_dict():
    result = run(nodepool(), nodeclass(), deployment("a", replicas=3, cpu="1"), deployment("b", replicas=2, cpu="9",
                                                                                           node_selector={"x": "y"}))
    text = render_json(result)
    assert json.loads(text) == result.to_dict()
    # one line per NodeClaim and per unschedulable pod, plus nine of structure (braces, the two
    # lists' openings and closings, summary, rounds and the empty `ignored`)
    assert result.ignored == []
    assert text.count("\n") == 9 + len(result.nodeclaims) + len(result.unschedulable)


def test_templates_on_the_same_types_share_one_table_and_match_a_fresh_filter():
    inputs = load_objects([nodeclass(), nodepool("a", [("karpenter.k8s.aws/instance-category", "In", "c")]),
                           nodepool("b", [("karpenter.k8s.aws/instance-category", "In", "c", "m"),
                                          ("karpenter.k8s.aws/instance-cpu", "Lt", "9")]),
                           daemonset(cpu="500m", memory="1Gi")])
    pools, _ = nodepool_instance_types(inputs, resolve_catalog(None), "us-east-1", ("us-east-1a",), 0.579)
    (pa, ta), (pb, tb) = pools
    a = Template(pa, ta, ("cpu", "memory", "pods"), inputs.daemonsets, 0)
    b = Template(pb, tb, ("cpu", "memory", "pods"), inputs.daemonsets, 1)
    assert a.table is b.table
    assert {it.name for it in a.types} == {it.name for it in ta if it.requirements.get(
        "karpenter.k8s.aws/instance-category").has("c")}
    assert all(int(next(iter(it.requirements.get("karpenter.k8s.aws/instance-cpu").values))) < 9 for it in b.types)
    # allocatable net of the DaemonSet (500m CPU) on every row
    for it, row in zip(b.types, b.alloc.tolist()):
        assert row[0] == it.allocatable["cpu"] - 500


def test_type_table_cache_is_bounded_and_keyed_by_the_exact_types():
    from tests.provisioner.prov_builders import fake_type
    lists = [[fake_type(f"t{i}", "2", "4Gi")] for i in range(instance_selection._MAX_TABLES + 5)]
    tables = [instance_selection.type_table(types) for types in lists]
    assert len(instance_selection._TABLES) <= instance_selection._MAX_TABLES
    assert instance_selection.type_table(lists[-1]) is tables[-1]
    assert tables[0].types[0].name == "t0" and tables[-1].types[0].name == f"t{len(lists) - 1}"


def test_solve_pauses_the_collector_and_restores_it():
    seen = []

    class Probe(Scheduler):
        def _setup(self, pods):
            seen.append(gc.isenabled())
            super()._setup(pods)

    assert gc.isenabled()
    Probe([]).solve([])
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        Probe([]).solve([])
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_advisor_exports_the_plans_price_per_team():
    from provisioner.controller.metrics import Metrics, pool_teams
    pools = [nodepool("web-api", labels={TEAM: "web"}), nodepool("web-front", labels={TEAM: "web"}),
             nodepool("ml-gpu", labels={TEAM: "ml"}), nodepool("loose"), {"metadata": "broken"}]
    teams = pool_teams(pools)
    assert teams == {"web-api": "web", "web-front": "web", "ml-gpu": "ml"}
    metrics = Metrics()
    claims = [{"nodepool": "web-api", "price_usd_hour": 1.0}, {"nodepool": "web-front", "price_usd_hour": 0.5},
              {"nodepool": "ml-gpu", "price_usd_hour": 4.0}, {"nodepool": "loose", "price_usd_hour": 0.25}]
    metrics.observe_plan(pending=4, unschedulable_reasons=[], nodeclaims=claims, hourly_price=5.75, teams=teams)
    value = metrics.registry.get_sample_value
    assert value("provisioner_team_projected_hourly_cost_usd", {"team": "web"}) == 1.5
    assert value("provisioner_team_projected_hourly_cost_usd", {"team": "ml"}) == 4.0
    assert value("provisioner_team_projected_hourly_cost_usd", {"team": "none"}) == 0.25
    metrics.observe_plan(pending=0, unschedulable_reasons=[], nodeclaims=[], hourly_price=0.0, teams=teams)
    assert value("provisioner_team_projected_hourly_cost_usd", {"team": "web"}) is None  # series of the last plan only
