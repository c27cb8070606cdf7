"""topology_test.go: topology spread (zone, hostname, capacity type, custom labels), pod affinity and
anti-affinity (zone, hostname, arch), inverse anti-affinity, namespaces, matchLabelKeys, node policies."""
from collections import Counter

from tests.provisioner.prov_builders import (deployment, karpenter_default_types, node, nodeclaim_of, nodepool, pod, req, run_core,
                           spread, taint, term)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
LABELS = {"app": "x"}
TYPES = karpenter_default_types()


def core(*objects, **kwargs):
    return run_core(*objects, types=TYPES, **kwargs)


def skew(result, key, labels=LABELS, existing=None):
    """Pods matching `labels` per domain of `key` (ExpectSkew), new nodes and given existing ones."""
    counts = Counter()
    for i, nc in enumerate(result.nodeclaims):
        domain = i if key == HOST else nc.labels.get(key)
        counts[domain] += sum(1 for p in nc.pods if p.startswith(tuple(labels_prefixes(labels))))
    for name, domain in (existing or {}).items():
        counts[domain] += len(result.existing.get(name, []))
    return sorted(c for c in counts.values() if c)


def labels_prefixes(labels):
    return ["default/spread", "default/x"] if labels == LABELS else []


def spread_pods(n, *constraints, name="spread", cpu=None, **kwargs):
    return deployment(name, replicas=n, labels=dict(LABELS), cpu=cpu, spread=list(constraints), **kwargs)


# --- basics --------------------------------------------------------------------------------------

def test_unknown_topology_key_leaves_pod_pending():
    result = core(pod("spread", labels=LABELS, spread=[spread("unknown")]), pod("plain"))
    assert [u.pod for u in result.unschedulable] == ["default/spread"] and nodeclaim_of(result, "default/plain")


def test_nil_label_selector_counts_nothing_so_pods_stack():
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    result = core(spread_pods(2, constraint))
    assert skew(result, ZONE) == [2]


def test_empty_label_selector_matches_all_pods():
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
    result = core(spread_pods(3, constraint))
    assert skew(result, ZONE) == [1, 1, 1]


# --- zonal ---------------------------------------------------------------------------------------

def test_pods_balance_across_zones_with_match_labels():
    assert skew(core(spread_pods(4, spread(ZONE))), ZONE) == [1, 1, 2]


def test_pods_balance_across_zones_with_match_expressions():
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "y"]}]}}
    assert skew(core(spread_pods(4, constraint)), ZONE) == [1, 1, 2]


def test_zonal_spread_respects_nodepool_zone_subset_requirement():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")]), spread_pods(4, spread(ZONE)))
    assert skew(result, ZONE) == [2, 2]


def test_zonal_spread_respects_nodepool_zone_label():
    result = core(nodepool(labels={ZONE: "test-zone-1"}), spread_pods(4, spread(ZONE)))
    assert skew(result, ZONE) == [4]


def test_zonal_spread_across_nodepools_with_zone_labels():
    result = core(nodepool("a", requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")], labels={ZONE: "test-zone-1"}),
                  nodepool("b", labels={ZONE: "test-zone-2"}), spread_pods(4, spread(ZONE)))
    assert skew(result, ZONE) == [2, 2]


def test_zonal_spread_counts_pods_on_existing_nodes():
    existing = node("old", labels={ZONE: "test-zone-3"}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
    bound = pod("x-old", labels=LABELS, cpu="1.1", node_name="old")
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")]), existing, bound,
                  spread_pods(6, spread(ZONE), cpu="1.1"))
    # zone-3 holds one pod and cannot grow, so the other zones may only reach two each
    assert skew(result, ZONE) == [2, 2] and len(result.unschedulable) == 2


def test_spread_schedules_to_non_minimum_domain_when_within_max_skew():
    existing = [node(f"old-{z}", labels={ZONE: z}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
                for z in ("test-zone-1", "test-zone-2")]
    bound = [pod(f"x-{i}", labels=LABELS, cpu="1.1", node_name=f"old-test-zone-{i}") for i in (1, 2)]
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-3")]), *existing, *bound,
                  spread_pods(10, spread(ZONE, max_skew=5), cpu="1.1"))
    assert sum(len(nc.pods) for nc in result.nodeclaims) == 6


def test_spread_never_violates_max_skew_when_do_not_schedule():
    existing = node("old", labels={ZONE: "test-zone-1"}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
    bound = pod("x-old", labels=LABELS, cpu="1.1", node_name="old")
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-2", "test-zone-3")]), existing, bound,
                  spread_pods(10, spread(ZONE), cpu="1.1"))
    assert skew(result, ZONE) == [2, 2] and len(result.unschedulable) == 6


def test_spread_discovers_domains_of_existing_nodes_without_matching_pods():
    existing = node("old", labels={ZONE: "test-zone-1"}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
    bound = pod("other", labels={"app": "other"}, cpu="1.1", node_name="old")
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-2", "test-zone-3")]), existing, bound,
                  spread_pods(10, spread(ZONE), cpu="1.1"))
    # zone-1 is a known domain with zero pods, so the others may only reach one each
    assert skew(result, ZONE) == [1, 1]


def test_spread_ignores_pods_in_other_namespaces():
    existing = node("old", labels={ZONE: "test-zone-1"}, allocatable={"cpu": "100", "memory": "100Gi", "pods": "100"},
                    taints=[taint("full")])
    others = [pod(f"o{i}", namespace="elsewhere", labels=LABELS, node_name="old") for i in range(3)]
    result = core(existing, *others, spread_pods(3, spread(ZONE)))
    assert skew(result, ZONE) == [1, 1, 1]


def test_min_domains_above_available_domains_limits_each_to_max_skew():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")]),
                  spread_pods(3, spread(ZONE, minDomains=3)))
    assert skew(result, ZONE) == [1, 1] and len(result.unschedulable) == 1


def test_min_domains_satisfied_schedules_everything():
    result = core(spread_pods(11, spread(ZONE, minDomains=3)))
    assert skew(result, ZONE) == [3, 4, 4]


# --- hostname ------------------------------------------------------------------------------------

def test_pods_balance_across_hostnames():
    assert skew(core(spread_pods(4, spread(HOST))), HOST) == [1, 1, 1, 1]


def test_hostname_spread_stacks_up_to_max_skew():
    assert skew(core(spread_pods(4, spread(HOST, max_skew=4))), HOST) == [4]


def test_hostname_spread_with_selector_not_matching_itself_packs_pods():
    result = core(deployment("other", replicas=5, labels={"app": "other"}, spread=[spread(HOST)]))
    assert len(result.nodeclaims) == 1


def test_two_deployments_balance_independently_across_hostnames():
    a = deployment("a", replicas=3, labels={"app": "a"}, spread=[spread(HOST, labels={"app": "a"})])
    b = deployment("b", replicas=3, labels={"app": "b"}, spread=[spread(HOST, labels={"app": "b"})])
    result = core(a, b)
    per_node = [sorted(p.split("/")[1][0] for p in nc.pods) for nc in result.nodeclaims]
    assert len(result.nodeclaims) == 3 and all(pods == ["a", "b"] for pods in per_node)


def test_match_label_keys_spread_each_value_separately():
    constraint = spread(HOST, matchLabelKeys=["revision"])
    a = deployment("spread", replicas=2, labels={**LABELS, "revision": "a"}, spread=[constraint])
    b = deployment("x", replicas=2, labels={**LABELS, "revision": "b"}, spread=[constraint])
    assert skew(core(a, b), HOST) == [2, 2]


def test_match_label_keys_absent_on_pod_is_ignored():
    assert skew(core(spread_pods(4, spread(HOST, matchLabelKeys=["revision"]))), HOST) == [1, 1, 1, 1]


# --- capacity type and other labels ------------------------------------------------------------

def test_pods_balance_across_capacity_types():
    assert skew(core(spread_pods(4, spread(CT))), CT) == [2, 2]


def test_capacity_type_spread_never_violates_max_skew():
    existing = node("old", labels={CT: "spot"}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
    result = core(nodepool(requirements=[(CT, "In", "on-demand")]), existing,
                  pod("x-old", labels=LABELS, cpu="1.1", node_name="old"), spread_pods(5, spread(CT), cpu="1.1"))
    assert skew(result, CT) == [2] and len(result.unschedulable) == 3


def test_schedule_anyway_spread_is_violated_when_needed():
    existing = node("old", labels={CT: "spot"}, allocatable={"cpu": "1.9", "memory": "2Gi", "pods": "5"})
    result = core(nodepool(requirements=[(CT, "In", "on-demand")]), existing,
                  pod("x-old", labels=LABELS, cpu="1.1", node_name="old"),
                  spread_pods(5, spread(CT, when="ScheduleAnyway"), cpu="1.1"))
    assert skew(result, CT) == [5] and not result.unschedulable


def test_pods_balance_across_arch_when_nodepool_allows_both():
    result = core(spread_pods(4, spread(ARCH), cpu="2"))
    assert sorted(Counter(nc.labels[ARCH] for nc in result.nodeclaims for _ in nc.pods).values()) == [2, 2]


def test_combined_zonal_and_hostname_spread_respects_both():
    result = core(spread_pods(21, spread(ZONE), spread(HOST, max_skew=3)))
    assert skew(result, ZONE) == [7, 7, 7] and max(skew(result, HOST)) <= 3


def test_zonal_spread_limited_by_node_selector():
    result = core(spread_pods(6, spread(ZONE), node_selector={ZONE: "test-zone-1"}))
    assert skew(result, ZONE) == [6]


def test_zonal_spread_not_limited_by_preferred_node_affinity():
    result = core(spread_pods(6, spread(ZONE), preferred=[(10, [req(ZONE, "In", "test-zone-1")])]))
    assert skew(result, ZONE) == [2, 2, 2]


def test_spread_with_node_taints_policy_ignore_counts_tainted_domains():
    tainted = [node(f"n-{v}", labels={"fake-label": v}, taints=[taint("taintname", "taintvalue")],
                    allocatable={"cpu": "100m", "pods": "10"}) for v in ("foo", "bar")]
    result = core(nodepool(labels={"fake-label": "baz"}), *tainted,
                  spread_pods(5, spread("fake-label", nodeTaintsPolicy="Ignore"), cpu="1"))
    assert sum(len(nc.pods) for nc in result.nodeclaims) == 1


def test_spread_with_node_taints_policy_honor_skips_untolerated_domains():
    tainted = [node(f"n-{v}", labels={"fake-label": v}, taints=[taint("taintname", "taintvalue")],
                    allocatable={"cpu": "100m", "pods": "10"}) for v in ("foo", "bar")]
    result = core(nodepool(labels={"fake-label": "baz"}), *tainted,
                  spread_pods(5, spread("fake-label", nodeTaintsPolicy="Honor"), cpu="1"))
    assert sum(len(nc.pods) for nc in result.nodeclaims) == 5


def test_spread_with_node_affinity_policy_honor_skips_unselected_domains():
    others = [node(f"n-{v}", labels={"fake-label": v, "pool": "other"}, allocatable={"cpu": "100m", "pods": "10"})
              for v in ("foo", "bar")]
    result = core(nodepool(labels={"fake-label": "baz", "pool": "mine"}), *others,
                  spread_pods(5, spread("fake-label"), cpu="1", node_selector={"pool": "mine"}))
    assert sum(len(nc.pods) for nc in result.nodeclaims) == 5


def test_spread_with_node_affinity_policy_ignore_counts_unselected_domains():
    others = [node(f"n-{v}", labels={"fake-label": v, "pool": "other"}, allocatable={"cpu": "100m", "pods": "10"})
              for v in ("foo", "bar")]
    result = core(nodepool(labels={"fake-label": "baz", "pool": "mine"}), *others,
                  spread_pods(5, spread("fake-label", nodeAffinityPolicy="Ignore"), cpu="1", node_selector={"pool": "mine"}))
    assert sum(len(nc.pods) for nc in result.nodeclaims) == 1


# --- pod affinity --------------------------------------------------------------------------------

def test_empty_affinity_lists_schedule():
    obj = pod()
    obj["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
                               "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    assert core(obj).nodeclaims


def test_pod_affinity_on_hostname_joins_target_pod():
    result = core(spread_pods(10, spread(HOST)), pod("target", labels={"security": "s2"}),
                  pod("follower", affinity=[term(HOST, {"security": "s2"})]))
    assert nodeclaim_of(result, "default/target") is nodeclaim_of(result, "default/follower")


def test_pod_affinity_on_arch_shares_arch_but_not_node():
    tsc = spread(HOST, labels={"security": "s2"})
    first = pod("first", labels={"security": "s2"}, cpu="2", spread=[tsc], node_selector={ARCH: "arm64"})
    second = pod("second", labels={"security": "s2"}, cpu="1", spread=[tsc], affinity=[term(ARCH, {"security": "s2"})])
    result = core(first, second)
    a, b = nodeclaim_of(result, "default/first"), nodeclaim_of(result, "default/second")
    assert a is not b and a.labels[ARCH] == b.labels[ARCH] == "arm64"


def test_self_affinity_on_hostname_puts_pods_together():
    result = core(deployment("s", replicas=3, labels={"security": "s2"}, affinity=[term(HOST, {"security": "s2"})]))
    assert len(result.nodeclaims) == 1


def test_self_affinity_on_hostname_only_bootstraps_the_first_domain():
    result = core(deployment("s", replicas=10, labels={"security": "s2"}, affinity=[term(HOST, {"security": "s2"})]))
    assert [len(nc.pods) for nc in result.nodeclaims] == [5] and len(result.unschedulable) == 5


def test_self_affinity_on_zone_puts_pods_in_one_zone():
    result = core(deployment("s", replicas=3, labels={"security": "s2"}, affinity=[term(ZONE, {"security": "s2"})]))
    assert len({nc.zone for nc in result.nodeclaims}) == 1


def test_self_affinity_on_zone_respects_zone_constraint():
    result = core(deployment("s", replicas=3, labels={"security": "s2"}, affinity=[term(ZONE, {"security": "s2"})],
                             required=[[req(ZONE, "In", "test-zone-3")]]))
    assert {nc.zone for nc in result.nodeclaims} == {"test-zone-3"}


def test_affine_pods_with_incompatible_selectors_get_two_nodes():
    aff = [term(ZONE, {"security": "s1"})]
    result = core(pod("a", labels={"security": "s1"}, affinity=aff, required=[[req(ZONE, "In", "test-zone-2")]]),
                  pod("b", labels={"security": "s1"}, affinity=aff, required=[[req(ZONE, "In", "test-zone-3")]]))
    assert (nodeclaim_of(result, "default/a").zone, nodeclaim_of(result, "default/b").zone) == ("test-zone-2", "test-zone-3")


def test_affinity_to_a_pod_that_does_not_exist_is_unschedulable_with_reason():
    result = core(pod("lonely", affinity=[term(HOST, {"security": "s2"})]))
    assert "unsatisfiable pod affinity constraint" in result.unschedulable[0].reason


def test_preferred_pod_affinity_can_be_violated():
    result = core(spread_pods(10, spread(HOST)), pod("pref", affinity_preferred=[(50, term(HOST, {"security": "s2"}))]))
    assert nodeclaim_of(result, "default/pref") is not None


def test_affinity_on_dependent_pods_resolves_over_retries():
    # b needs a, but b is larger so it is tried first; the queue retries it once a has landed
    a = pod("a", labels={"tier": "a"}, cpu="100m")
    b = pod("b", labels={"tier": "b"}, cpu="1", affinity=[term(HOST, {"tier": "a"})])
    result = core(a, b)
    assert nodeclaim_of(result, "default/a") is nodeclaim_of(result, "default/b")


def test_unsatisfiable_affinity_chain_fails():
    a = pod("a", labels={"tier": "a"}, affinity=[term(HOST, {"tier": "b"})])
    b = pod("b", labels={"tier": "b"}, affinity=[term(HOST, {"tier": "a"})])
    assert len(core(a, b).unschedulable) == 2


def test_affinity_namespaces_filter_out_pods_elsewhere():
    target = pod("target", namespace="other", labels={"security": "s2"})
    follower = pod("follower", affinity=[term(HOST, {"security": "s2"})])
    assert len(core(target, follower).unschedulable) == 1


def test_affinity_namespaces_list_finds_pod_elsewhere():
    target = pod("target", namespace="other", labels={"security": "s2"})
    follower = pod("follower", affinity=[term(HOST, {"security": "s2"}, namespaces=["other"])])
    result = core(target, follower)
    assert nodeclaim_of(result, "other/target") is nodeclaim_of(result, "default/follower")


def test_affinity_empty_namespace_selector_matches_every_namespace():
    target = pod("target", namespace="other", labels={"security": "s2"})
    follower = pod("follower", affinity=[term(HOST, {"security": "s2"}, namespaceSelector={})])
    result = core(target, follower)
    assert nodeclaim_of(result, "other/target") is nodeclaim_of(result, "default/follower")


# --- pod anti-affinity ---------------------------------------------------------------------------

def test_anti_affinity_on_hostname_separates_nodes():
    result = core(pod("a", labels={"security": "s2"}), pod("b", anti_affinity=[term(HOST, {"security": "s2"})]))
    assert nodeclaim_of(result, "default/a") is not nodeclaim_of(result, "default/b")


def test_anti_affinity_on_zone_blocked_when_every_zone_has_a_match():
    zonal = [pod(f"z{i}", labels={"security": "s2"}, cpu="2", node_selector={ZONE: f"test-zone-{i}"}) for i in (1, 2, 3)]
    result = core(*zonal, pod("aff", anti_affinity=[term(ZONE, {"security": "s2"})]))
    assert [u.pod for u in result.unschedulable] == ["default/aff"]


def test_anti_affinity_on_zone_blocked_by_pod_with_undecided_zone_until_the_next_round():
    """topology_test.go "should not schedule pods with affinity to a non-existent pod"-style blocking:
    in one round the first NodeClaim's zone is undecided, so a zonal anti-affinity blocks every zone;
    once it launched (the next provisioning round) its zone is known and the pod goes elsewhere."""
    result = core(pod("first", labels={"security": "s2"}, cpu="2"), pod("aff", anti_affinity=[term(ZONE, {"security": "s2"})]))
    assert result.unschedulable == [] and result.rounds == 2
    first, aff = nodeclaim_of(result, "default/first"), nodeclaim_of(result, "default/aff")
    assert (first.round, aff.round) == (1, 2) and first.zone != aff.zone


def test_anti_affinity_on_arch_separates_archs():
    tsc = spread(HOST, labels={"security": "s2"})
    first = pod("first", labels={"security": "s2"}, cpu="2", spread=[tsc], node_selector={ARCH: "arm64"})
    second = pod("second", labels={"security": "s2"}, cpu="1", spread=[tsc], anti_affinity=[term(ARCH, {"security": "s2"})])
    result = core(first, second)
    assert nodeclaim_of(result, "default/second").labels[ARCH] == "amd64"


def test_inverse_anti_affinity_keeps_selected_pod_out_of_owners_zones():
    anti = [term(ZONE, {"security": "s2"})]
    owners = [pod(f"z{i}", cpu="2", anti_affinity=anti, node_selector={ZONE: f"test-zone-{i}"}) for i in (1, 2, 3)]
    result = core(*owners, pod("aff", labels={"security": "s2"}))
    assert [u.pod for u in result.unschedulable] == ["default/aff"]


def test_inverse_preferred_anti_affinity_is_not_enforced():
    anti = [(10, term(ZONE, {"security": "s2"}))]
    owners = [pod(f"z{i}", cpu="2", anti_preferred=anti, node_selector={ZONE: f"test-zone-{i}"}) for i in (1, 2, 3)]
    result = core(*owners, pod("aff", labels={"security": "s2"}))
    assert not result.unschedulable


def test_inverse_anti_affinity_of_running_pods_blocks_their_zone():
    existing = node("old", labels={ZONE: "test-zone-1"}, allocatable={"cpu": "2", "pods": "10"}, taints=[taint("full")])
    owner = pod("owner", cpu="1", node_name="old", tolerations=[{"operator": "Exists"}],
                anti_affinity=[term(ZONE, {"security": "s2"})])
    result = core(existing, owner, pod("aff", labels={"security": "s2"}, node_selector={ZONE: "test-zone-1"}))
    assert [u.pod for u in result.unschedulable] == ["default/aff"]


def test_preferred_anti_affinity_can_be_violated():
    anti = [(50, term(ZONE, LABELS))]
    pods = deployment("aff", replicas=10, labels={"app": "aff"}, anti_preferred=anti)
    result = core(spread_pods(3, spread(ZONE)), pods)
    assert not result.unschedulable


def test_anti_affinity_deployment_gets_one_node_per_replica():
    anti = [term(HOST, {"app": "db"})]
    result = core(deployment("db", replicas=4, labels={"app": "db"}, anti_affinity=anti))
    assert [len(nc.pods) for nc in result.nodeclaims] == [1, 1, 1, 1]
