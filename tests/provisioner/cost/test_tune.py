"""`provisioner tune`: requirement search over NodePools, its JSON shape, and that applying its
changes to the manifests and re-running `simulate` reproduces the tuned plan.

Karpenter packs pods into one NodeClaim while any allowed type still fits them and then launches
the cheapest type left (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
nodeclaim.go `Add`, instance_selection in scheduler.go): a pool without a size cap ends on the
largest types. tune only narrows pools, so Karpenter's own plan gets cheaper.
"""
import json

import pytest
import yaml

from provisioner.cli import main
from provisioner.cost.tune import CPU_KEY, TUNABLE_KEYS, apply_changes, replace_requirements, tune
from provisioner.loader import load_objects
from provisioner.scheduling.instance_selection import Template
from provisioner.api import nodepool_instance_types, resolve_catalog

from tests.provisioner.prov_builders import deployment, nodeclass, nodepool, taint

pytest.importorskip("scipy")

TEAM = "karpenter-platform.io/team"
GENERAL = [("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"),
           ("karpenter.k8s.aws/instance-generation", "Gt", "5"),
           ("karpenter.sh/capacity-type", "In", "on-demand"), ("kubernetes.io/arch", "In", "amd64")]


def services():
    """An open c/m/r pool and 150 pods of mixed shapes: Karpenter fills one giant NodeClaim."""
    shapes = [("2", "4Gi", 30), ("1", "2Gi", 40), ("4", "8Gi", 20), ("500m", "1Gi", 60)]
    return [nodeclass(), nodepool("web-frontend", GENERAL, labels={TEAM: "web"})] + [
        deployment(f"svc-{i}", replicas=n, cpu=cpu, memory=mem) for i, (cpu, mem, n) in enumerate(shapes)]


def write(tmp_path, name, docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def run_json(capsys, command, path):
    assert main([command, "-f", path, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_tune_json_has_exactly_the_documented_shape(tmp_path, capsys):
    data = run_json(capsys, "tune", write(tmp_path, "a.yaml", services()))
    assert list(data) == ["baseline", "tuned", "changes", "bound_usd_hour"]
    assert list(data["baseline"]) == list(data["tuned"]) == ["price_usd_hour", "unschedulable"]
    assert isinstance(data["baseline"]["price_usd_hour"], float) and isinstance(data["bound_usd_hour"], float)
    assert data["changes"] and list(data["changes"][0]) == ["nodepool", "requirements"]
    assert all(list(r) == ["key", "operator", "values"] and all(isinstance(v, str) for v in r["values"])
               for c in data["changes"] for r in c["requirements"])


@pytest.mark.slow
def test_applying_changes_and_simulating_reproduces_tuned(tmp_path, capsys):
    objects = services()
    data = run_json(capsys, "tune", write(tmp_path, "a.yaml", objects))
    assert data["tuned"]["price_usd_hour"] < data["baseline"]["price_usd_hour"]
    before = run_json(capsys, "simulate", write(tmp_path, "a.yaml", objects))["summary"]
    after = run_json(capsys, "simulate", write(tmp_path, "b.yaml", apply_changes(objects, data["changes"])))["summary"]
    assert (before["price_usd_hour"], before["unschedulable"]) == (data["baseline"]["price_usd_hour"],
                                                                  data["baseline"]["unschedulable"])
    assert (after["price_usd_hour"], after["unschedulable"]) == (data["tuned"]["price_usd_hour"],
                                                                data["tuned"]["unschedulable"])


@pytest.mark.slow
def test_tuned_plan_is_above_the_lp_bound_and_cheaper_than_the_open_pool():
    result = tune(load_objects(services()))
    assert result.bound_usd_hour <= result.tuned.price_usd_hour < result.baseline.price_usd_hour
    assert result.tuned.unschedulable == result.baseline.unschedulable == 0


def _admitted(objects) -> dict:
    inputs = load_objects(objects)
    pools, _ = nodepool_instance_types(inputs, resolve_catalog(None), "us-east-1", ("us-east-1a", "us-east-1b"), 0.579)
    return {p.name: {it.name for it in Template(p, types, ("cpu",), (), 0).types} for p, types in pools}


@pytest.mark.slow
def test_tune_only_narrows_even_when_a_pool_has_its_own_size_requirement():
    """A pool with `instance-cpu Gt 3` keeps that floor: the cap is written as an In list of the
    vCPU counts both admit, never as a bare `Lt` that would drop the floor."""
    objects = [nodeclass(),
               nodepool("floor", GENERAL + [(CPU_KEY, "Gt", "3")], labels={TEAM: "web"},
                        taints=[taint("dedicated", "floor")]),
               ] + [deployment(f"d{i}", replicas=25, cpu=c, memory=m,
                               tolerations=[{"key": "dedicated", "operator": "Exists"}])
                    for i, (c, m) in enumerate([("2", "4Gi"), ("1", "3Gi"), ("500m", "1Gi")])]
    result = tune(load_objects(objects))
    changes = result.change_list()
    assert changes, "an open pool with 75 pods has a cheaper cap"
    tuned = apply_changes(objects, changes)
    before, after = _admitted(objects), _admitted(tuned)
    assert after["floor"] < before["floor"]
    cpu = [r for r in changes[0]["requirements"] if r["key"] == CPU_KEY]
    if cpu:
        assert cpu[0]["operator"] == "In" and min(int(v) for v in cpu[0]["values"]) >= 4
    pool = next(o for o in tuned if o["kind"] == "NodePool")
    assert pool["spec"]["template"]["spec"]["taints"] == [taint("dedicated", "floor")]
    assert pool["spec"]["template"]["metadata"]["labels"] == {TEAM: "web"}


@pytest.mark.slow
def test_tune_changes_only_instance_shape_keys_and_never_adds_unschedulable_pods():
    objects = services() + [deployment("huge", replicas=2, cpu="60", memory="100Gi")]
    result = tune(load_objects(objects))
    assert {r["key"] for c in result.change_list() for r in c["requirements"]} <= set(TUNABLE_KEYS)
    assert result.tuned.unschedulable <= result.baseline.unschedulable
    # the 60-CPU pods rule out every cap below 64 vCPU
    for change in result.change_list():
        for r in change["requirements"]:
            if r["key"] == CPU_KEY and r["operator"] == "Lt":
                assert int(r["values"][0]) > 64


def test_replace_requirements_replaces_every_entry_of_a_key_and_appends_new_keys():
    own = [{"key": CPU_KEY, "operator": "Gt", "values": ["1"]}, {"key": CPU_KEY, "operator": "Lt", "values": ["200"]},
           {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    change = [{"key": CPU_KEY, "operator": "Lt", "values": ["33"]},
              {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["6"]}]
    assert replace_requirements(own, change) == [own[2]] + change


@pytest.mark.slow
def test_table_prints_team_file_yaml_for_platform_pools(tmp_path, capsys):
    assert main(["tune", "-f", write(tmp_path, "a.yaml", services())]) == 0
    out = capsys.readouterr().out
    assert "Baseline: $" in out and "LP lower bound: $" in out
    snippet = out.split("# stacks/teams/web.yaml", 1)[1]
    doc = yaml.safe_load(snippet.split("\n", 1)[1])
    assert doc["nodePools"][0]["name"] == "frontend"
    assert {r["key"] for r in doc["nodePools"][0]["requirements"]} <= set(TUNABLE_KEYS)


def test_tune_without_nodepools_exits_2(tmp_path, capsys):
    assert main(["tune", "-f", write(tmp_path, "a.yaml", [deployment("x", cpu="1")])]) == 2
    assert "no NodePool in the input" in capsys.readouterr().err


def test_tune_with_no_launchable_pool_reports_zero_floats_and_exits_0(tmp_path, capsys):
    lonely = nodepool("lonely", nodeclass_name="missing")
    data = run_json(capsys, "tune", write(tmp_path, "a.yaml", [lonely, deployment("x", cpu="1")]))
    assert data == {"baseline": {"price_usd_hour": 0.0, "unschedulable": 1},
                    "tuned": {"price_usd_hour": 0.0, "unschedulable": 1}, "changes": [], "bound_usd_hour": 0.0}
    assert all(isinstance(data[k]["price_usd_hour"], float) for k in ("baseline", "tuned"))


from hypothesis import given, settings, strategies as st  # noqa: E402

from provisioner.cost.tune import (CATEGORY_KEY, GENERATION_KEY, GPU_COUNT_KEY,  # noqa: E402
                                   MANUFACTURER_KEY, MEMORY_KEY, _lp_families, _Search)
from provisioner.scheduling.requirements import Requirement  # noqa: E402

OWN = st.sampled_from([None, ("Gt", ["3"]), ("Gt", ["15"]), ("Lt", ["9"]), ("In", ["2", "4", "8", "16", "64"]),
                       ("NotIn", ["4", "8"]), ("Exists", [])])


@settings(max_examples=25, deadline=None)
@given(own=OWN, categories=st.sets(st.sampled_from("cmrt"), min_size=1), generation=st.sampled_from(["2", "5", "6"]))
@pytest.mark.slow
def test_every_candidate_change_admits_a_subset_of_what_the_pool_admitted(own, categories, generation):
    """Whatever the pool already says about a key, a replacement on that key never widens it."""
    requirements = [(CATEGORY_KEY, "In", *sorted(categories)), (GENERATION_KEY, "Gt", generation)]
    if own is not None:
        requirements.append((CPU_KEY, own[0], *own[1]))
    inputs = load_objects([nodeclass(), nodepool("p", requirements)])
    search = _Search(inputs, resolve_catalog(None), "us-east-1", ("us-east-1a",), 0.579)
    pool = search.pools["p"]
    hints = {"p": {"c6a", "m5a", "r5a", "t3"}}
    for key in TUNABLE_KEYS:
        own_req = pool.requirements.raw(key)
        before = search.values("p", key, {})
        types_before = {it.name for it in search.admitted("p", {})}
        for _, change in search.candidates("p", key, {}, hints):
            assert {it.name for it in search.admitted("p", {key: change})} < types_before
            new = Requirement.of(change["key"], change["operator"], change["values"])
            after = {v for v in before if new.has(v)}
            assert after < before or after == before and own_req is None
            assert own_req is None or all(own_req.has(v) for v in after)
            narrowed = search.values("p", key, {"p": {key: change}})
            assert narrowed <= before


def _search(objects):
    return _Search(load_objects(objects), resolve_catalog(None), "us-east-1", ("us-east-1a",), 0.579)


@pytest.mark.slow
def test_cpu_floors_keep_the_current_cap_and_caps_keep_the_current_floor():
    """A size floor (`instance-cpu Gt N`) stops Karpenter from picking small types that cost more
    per vCPU; combined with a cap it is written as the In list of vCPU counts in the window."""
    search = _search([nodeclass(), nodepool("p", GENERAL)])
    state = {"p": {CPU_KEY: {"key": CPU_KEY, "operator": "Lt", "values": ["33"]}}}
    smallest = min(int(v) for v in search.values("p", CPU_KEY, state))
    floors = [c for g, c in search.candidates("p", CPU_KEY, state) if g == "floor"]
    assert floors, "a pool of 1..32 vCPU types has floors"
    for change in floors:
        values = [int(v) for v in change["values"]]
        assert change["operator"] == "In" and max(values) == 32 and min(values) > smallest
    state = {"p": {CPU_KEY: {"key": CPU_KEY, "operator": "Gt", "values": ["7"]}}}
    caps = [c for g, c in search.candidates("p", CPU_KEY, state) if g == "cap"]
    assert {"key": CPU_KEY, "operator": "In", "values": ["8", "12", "16"]} in caps
    assert all(min(int(v) for v in c["values"]) >= 8 for c in caps)


def test_memory_caps_are_offered_in_mib_largest_first():
    search = _search([nodeclass(), nodepool("p", GENERAL)])
    caps = [c for g, c in search.candidates("p", MEMORY_KEY, {}) if g == "cap"]
    limits = [int(c["values"][0]) for c in caps]
    assert caps and all(c["operator"] == "Lt" for c in caps)
    assert limits == sorted(limits, reverse=True) and 128 * 1024 + 1 in limits


def test_gpu_count_cap_only_for_pools_where_every_type_has_gpus():
    """`instance-gpu-count Lt N` would drop every type without the label (DoesNotExist does not
    intersect Lt), so a pool that also admits CPU types gets no GPU cap."""
    gpu = [("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"),
           ("karpenter.sh/capacity-type", "In", "on-demand")]
    search = _search([nodeclass(), nodepool("gpu", gpu), nodepool("cpu", GENERAL)])
    caps = [c["values"][0] for _, c in search.candidates("gpu", GPU_COUNT_KEY, {})]
    assert caps == ["5", "3", "2"]
    assert search.candidates("cpu", GPU_COUNT_KEY, {}) == []


def test_gpu_pool_is_capped_at_fewer_gpus_per_node_when_that_is_cheaper():
    """Karpenter fills one NodeClaim with 1-GPU pods until only the 8-GPU types fit (nodeclaim.go
    `Add`); 12 pods then buy two 8-GPU nodes. A GPU-count cap buys 4-GPU nodes instead."""
    gpu = [("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"),
           ("karpenter.k8s.aws/instance-family", "In", "g4dn"),
           ("karpenter.sh/capacity-type", "In", "on-demand")]
    objects = [nodeclass(), nodepool("ml", gpu, taints=[taint("nvidia.com/gpu", "true")])] + [
        deployment("train", replicas=12, cpu="4", memory="16Gi", resources={"nvidia.com/gpu": "1"},
                   tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])]
    result = tune(load_objects(objects))
    keys = {r["key"]: r for c in result.change_list() for r in c["requirements"]}
    assert result.tuned.price_usd_hour < result.baseline.price_usd_hour
    assert result.tuned.unschedulable == 0
    assert GPU_COUNT_KEY in keys or CPU_KEY in keys or MEMORY_KEY in keys


def test_lp_bound_carriers_price_the_bound_and_name_the_families_tune_restarts_from():
    from provisioner.catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
    from provisioner.cost.lpbound import lower_bound
    inputs = load_objects(services())
    bound = lower_bound(inputs)
    search = _Search(inputs, resolve_catalog(None), DEFAULT_REGION, DEFAULT_ZONES, DEFAULT_SPOT_DISCOUNT)
    carried = {t for _, t, _ in bound.carriers}
    prices = {it.name: min(o.price for o in it.offerings if o.available and o.capacity_type == "on-demand")
              for it in search.types["web-frontend"] if it.name in carried}
    assert bound.carriers and all(pool == "web-frontend" for pool, _, _ in bound.carriers)
    assert sum(prices[t] * x for _, t, x in bound.carriers) == pytest.approx(bound.price_usd_hour, rel=1e-6)
    families = _lp_families(bound, search)["web-frontend"]
    assert families == {t.split(".")[0] for _, t, _ in bound.carriers}


@pytest.mark.slow
def test_evaluation_budget_is_respected_and_the_result_still_reproduces(tmp_path, capsys):
    objects = services()
    inputs = load_objects(objects)
    result = tune(inputs, max_evaluations=4)
    assert result.evaluations <= 4
    after = run_json(capsys, "simulate", write(tmp_path, "b.yaml", apply_changes(objects, result.change_list())))
    assert after["summary"]["price_usd_hour"] == result.to_dict()["tuned"]["price_usd_hour"]


@pytest.mark.slow
def test_no_candidate_drops_an_architecture_capacity_type_or_zone_the_pool_launches_in():
    """One CPU maker on an amd64 + arm64 pool (intel/amd vs aws) would make it single-architecture;
    the search only narrows within what the team chose."""
    both = [(CATEGORY_KEY, "In", "c", "m", "r"), (GENERATION_KEY, "Gt", "5"),
            ("karpenter.sh/capacity-type", "In", "spot", "on-demand"), ("kubernetes.io/arch", "In", "amd64", "arm64")]
    search = _search([nodeclass(), nodepool("p", both)])
    assert search.candidates("p", MANUFACTURER_KEY, {}) == []
    reach = search._reach("p", search.admitted("p", {}))
    assert reach[0] == {"amd64", "arm64"}
    for key in TUNABLE_KEYS:
        for _, change in search.candidates("p", key, {}, {"p": {"m7g", "c6a"}}):
            assert search._reach("p", search.admitted("p", {key: change})) == reach
