"""suite_test.go (Instance Type Compatibility, Binpacking, In-Flight/Existing Nodes, taints, host ports)
and the provisioning suite's weights, limits and DaemonSet cases."""
from kubefacts.quantity import milli as parse

from tests.provisioner.prov_builders import (daemonset, deployment, fake_type, karpenter_default_types, karpenter_type, node,
                           nodeclaim_of, nodepool, pod, reasons, req, run_core, taint, term)

ARCH = "kubernetes.io/arch"
IT = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
TYPES = karpenter_default_types()


def core(*objects, types=TYPES, **kwargs):
    return run_core(*objects, types=types, **kwargs)


def fake_types(n):
    """fake.InstanceTypes(n): type i has i+1 CPU, 2(i+1) GiB, 10(i+1) pods."""
    return [karpenter_type(f"fake-it-{i}", cpu=str(i + 1), memory=f"{2 * (i + 1)}Gi", pods=10 * (i + 1)) for i in range(n)]


def nodes_used(result, prefix):
    return {id(nodeclaim_of(result, p)) for nc in result.nodeclaims for p in nc.pods if p.startswith(prefix)}


# --- Instance type compatibility ----------------------------------------------------------------

def test_pod_larger_than_every_instance_type_is_not_scheduled():
    result = core(pod(cpu="512"))
    assert "no instance type has enough resources" in reasons(result)["default/pod"]


def test_pods_with_different_archs_get_different_nodes():
    result = core(nodepool(requirements=[(ARCH, "In", "arm64", "amd64")]),
                  pod("a", node_selector={ARCH: "amd64"}), pod("b", node_selector={ARCH: "arm64"}))
    assert nodeclaim_of(result, "default/a") is not nodeclaim_of(result, "default/b")


def test_instance_type_excluded_by_nodepool_arch_is_not_used():
    result = core(nodepool(requirements=[(ARCH, "In", "amd64")]), pod(required=[[req(IT, "In", "arm-instance-type")]]))
    assert result.unschedulable and not result.nodeclaims


def test_os_only_offered_by_excluded_arch_is_not_scheduled():
    result = core(nodepool(requirements=[(ARCH, "In", "amd64")]), pod(required=[[req("kubernetes.io/os", "In", "ios")]]))
    assert len(result.unschedulable) == 1


def test_only_arch_with_enough_cpu_excluded_by_nodepool_is_not_scheduled():
    result = core(nodepool(requirements=[(ARCH, "In", "amd64")]), pod(cpu="14"))
    assert len(result.unschedulable) == 1


def test_pods_with_different_os_get_different_nodes():
    result = core(pod("a", node_selector={"kubernetes.io/os": "linux"}), pod("b", node_selector={"kubernetes.io/os": "windows"}))
    assert nodeclaim_of(result, "default/a") is not nodeclaim_of(result, "default/b")


def test_deprecated_instance_type_label_is_normalized():
    result = core(pod("a", node_selector={"beta.kubernetes.io/instance-type": "small-instance-type"}),
                  pod("b", node_selector={IT: "default-instance-type"}))
    assert (nodeclaim_of(result, "default/a").instance_type, nodeclaim_of(result, "default/b").instance_type) == \
        ("small-instance-type", "default-instance-type")


def test_pods_with_different_zone_selectors_get_different_nodes():
    result = core(pod("a", node_selector={ZONE: "test-zone-1"}), pod("b", node_selector={ZONE: "test-zone-2"}))
    assert (nodeclaim_of(result, "default/a").zone, nodeclaim_of(result, "default/b").zone) == ("test-zone-1", "test-zone-2")


def test_resources_on_different_types_need_different_nodes():
    types = fake_types(5)
    types[0].capacity["karpenter.sh/super-great-gpu"] = types[0].allocatable["karpenter.sh/super-great-gpu"] = parse(25)
    types[1].capacity["karpenter.sh/even-better-gpu"] = types[1].allocatable["karpenter.sh/even-better-gpu"] = parse(25)
    result = core(pod("a", resources={"karpenter.sh/super-great-gpu": "1"}),
                  pod("b", resources={"karpenter.sh/even-better-gpu": "1"}), types=types)
    assert (nodeclaim_of(result, "default/a").instance_type, nodeclaim_of(result, "default/b").instance_type) == \
        ("fake-it-0", "fake-it-1")


def test_pod_needing_resources_no_single_type_has_is_not_scheduled():
    types = fake_types(5)
    types[0].capacity["gpu-a"] = types[0].allocatable["gpu-a"] = parse(25)
    types[1].capacity["gpu-b"] = types[1].allocatable["gpu-b"] = parse(25)
    result = core(pod(resources={"gpu-a": "1", "gpu-b": "1"}), types=types)
    assert len(result.unschedulable) == 1


# --- Binpacking --------------------------------------------------------------------------------

def test_small_pod_lands_on_smallest_instance_type():
    assert core(pod(memory="100M")).nodeclaims[0].instance_type == "small-instance-type"


def test_pod_overhead_is_counted_when_choosing_instance_type():
    obj = pod(cpu="1")
    obj["spec"]["overhead"] = {"cpu": "2"}
    assert core(obj).nodeclaims[0].instance_type == "default-instance-type"


def test_multiple_small_pods_share_smallest_instance_type():
    result = core(deployment("app", replicas=5, memory="10M"))
    assert [(nc.instance_type, len(nc.pods)) for nc in result.nodeclaims] == [("small-instance-type", 5)]


def test_new_nodes_are_created_when_a_node_is_at_capacity():
    result = core(deployment("app", replicas=40, memory="1.8G", node_selector={ARCH: "amd64"}))
    assert len(result.nodeclaims) == 20 and {nc.instance_type for nc in result.nodeclaims} == {"default-instance-type"}


def test_small_and_large_pods_are_packed_together():
    result = core(deployment("large", replicas=40, memory="1.8G", node_selector={ARCH: "amd64"}),
                  deployment("small", replicas=20, memory="400M", node_selector={ARCH: "amd64"}))
    assert len(result.nodeclaims) == 20 and all(len(nc.pods) == 3 for nc in result.nodeclaims)


def test_nodes_are_packed_tightly_with_a_smaller_second_node():
    result = core(pod("big", cpu="4.5"), pod("small", cpu="1"), types=fake_types(5))
    big, small = nodeclaim_of(result, "default/big"), nodeclaim_of(result, "default/small")
    assert big is not small and (big.instance_type, small.instance_type) == ("fake-it-4", "fake-it-1")


def test_zero_quantity_unknown_resource_request_is_fine():
    assert core(pod(resources={"foo.com/weird-resources": "0"})).nodeclaims


def test_pod_limit_per_node_creates_more_nodes():
    result = core(deployment("app", replicas=25, cpu="1m", memory="1m", node_selector={ARCH: "amd64"}))
    assert [nc.instance_type for nc in result.nodeclaims] == ["small-instance-type"] * 5


def test_init_container_requests_pick_larger_type():
    result = core(pod(cpu="1", memory="1Gi", init=[{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]))
    assert result.nodeclaims[0].instance_type == "default-instance-type"


def test_init_container_larger_than_every_type_is_not_scheduled():
    result = core(pod(cpu="1", memory="1Gi", init=[{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Ti"}}}]))
    assert len(result.unschedulable) == 1


def test_cheapest_valid_type_wins_regardless_of_size():
    types = [fake_type("medium", "2", "2Gi", price=3.0), fake_type("small", "1", "1Gi", price=2.0),
             fake_type("large", "4", "4Gi", price=1.0)]
    assert core(pod(cpu="100m"), types=types).nodeclaims[0].instance_type == "large"


# --- Existing nodes (in-flight capacity) --------------------------------------------------------

def test_pod_goes_to_existing_node_with_room_instead_of_new_node():
    result = core(node("node-a", allocatable={"cpu": "4", "memory": "8Gi", "pods": "10"}), pod(cpu="1"))
    assert result.existing == {"node-a": ["default/pod"]} and not result.nodeclaims


def test_existing_node_that_is_full_leads_to_new_node():
    result = core(node("node-a", allocatable={"cpu": "4", "memory": "8Gi", "pods": "10"}), pod("bound", cpu="3.5", node_name="node-a"),
                  pod(cpu="1"))
    assert not result.existing and len(result.nodeclaims) == 1


def test_existing_node_with_incompatible_labels_is_skipped():
    result = core(node("node-a", labels={ARCH: "arm64"}), pod(node_selector={ARCH: "amd64"}))
    assert not result.existing and len(result.nodeclaims) == 1


def test_multiple_pods_fill_existing_node_unowned_by_karpenter():
    result = core(node("node-a", allocatable={"cpu": "10", "memory": "10Gi", "pods": "5"}), deployment("app", replicas=6, cpu="1"))
    assert len(result.existing["node-a"]) == 5 and sum(len(nc.pods) for nc in result.nodeclaims) == 1


def test_existing_nodes_are_filled_in_name_order():
    result = core(node("node-b"), node("node-a"), pod(cpu="100m"))
    assert list(result.existing) == ["node-a"]


def test_existing_node_taint_is_respected():
    result = core(node("node-a", taints=[taint("dedicated", "db")]), pod())
    assert not result.existing and result.nodeclaims


def test_existing_unmanaged_node_not_ready_taint_is_honoured():
    """statenode.go Taints(): only a managed (NodeClaim-tracked), uninitialized node drops known
    ephemeral taints; a Node alone is unmanaged, so its not-ready taint repels the pod."""
    result = core(node("node-a", taints=[taint("node.kubernetes.io/not-ready", effect="NoSchedule")]), pod())
    assert result.existing == {} and len(result.nodeclaims) == 1


def test_existing_node_counts_against_nodepool_limits():
    existing = node("old", labels={"karpenter.sh/nodepool": "default"}, capacity={"cpu": "100"},
                    taints=[taint("draining")])
    result = core(nodepool(limits={"cpu": "20"}), existing, pod(cpu="100m"))
    assert reasons(result)["default/pod"] == 'nodepool "default": all available instance types exceed limits for nodepool'


def test_daemonset_overhead_not_compatible_with_existing_node_is_not_subtracted():
    agent = daemonset(cpu="2", node_selector={ARCH: "arm64"})
    result = core(node("node-a", labels={ARCH: "amd64"}, allocatable={"cpu": "3", "memory": "8Gi", "pods": "10"}), agent, pod(cpu="2"))
    assert result.existing == {"node-a": ["default/pod"]}


def test_existing_node_reserves_room_for_daemonsets_not_yet_running():
    agent = daemonset(cpu="2")
    result = core(node("node-a", allocatable={"cpu": "3", "memory": "8Gi", "pods": "10"}), agent, pod(cpu="2"))
    assert not result.existing and len(result.nodeclaims) == 1


# --- Taints ------------------------------------------------------------------------------------

def test_pod_without_toleration_is_not_scheduled_and_taint_is_named():
    result = core(nodepool(taints=[taint("nvidia.com/gpu", "true")]), pod())
    assert reasons(result)["default/pod"] == 'nodepool "default": did not tolerate taint nvidia.com/gpu=true:NoSchedule'


def test_pod_tolerating_nodepool_taint_is_scheduled():
    tol = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    assert core(nodepool(taints=[taint("nvidia.com/gpu", "true")]), pod(tolerations=[tol])).nodeclaims


def test_exists_toleration_without_key_tolerates_everything():
    assert core(nodepool(taints=[taint("a"), taint("b", "c", "NoExecute")]), pod(tolerations=[{"operator": "Exists"}])).nodeclaims


def test_startup_taints_need_not_be_tolerated():
    assert core(nodepool(startup_taints=[taint("node.cilium.io/agent-not-ready")]), pod()).nodeclaims


def test_prefer_no_schedule_taint_is_tolerated_after_relaxation():
    result = core(nodepool(taints=[taint("spot-only", effect="PreferNoSchedule")]), pod())
    assert result.nodeclaims and not result.unschedulable


def test_pod_prefers_nodepool_without_prefer_no_schedule_taint():
    result = core(nodepool("tainted", weight=10, taints=[taint("x", effect="PreferNoSchedule")]), nodepool("plain"), pod())
    assert result.nodeclaims[0].nodepool == "plain"


# --- Host ports --------------------------------------------------------------------------------

def test_pods_with_same_host_port_go_to_different_nodes():
    result = core(deployment("app", replicas=2, host_port=80))
    assert len(result.nodeclaims) == 2


def test_daemonset_host_port_blocks_pod_with_same_port():
    result = core(daemonset(cpu="2", memory="2Gi", host_port=8080), pod(cpu="1", memory="1Gi", host_port=8080))
    assert len(result.unschedulable) == 1 and not result.nodeclaims


# --- NodePool weights, limits -----------------------------------------------------------------

def test_heaviest_nodepool_is_used_first():
    result = core(nodepool("light", weight=10), nodepool("heavy", weight=100), pod())
    assert result.nodeclaims[0].nodepool == "heavy"


def test_equal_weights_fall_back_to_nodepool_name_descending():
    """pkg/utils/nodepool/nodepool.go OrderByWeight: equal weights sort by `nps[a].Name > nps[b].Name`."""
    result = core(nodepool("a-pool"), nodepool("b-pool"), pod())
    assert result.nodeclaims[0].nodepool == "b-pool"


def test_explicitly_selected_nodepool_wins_over_heavier_ones():
    result = core(nodepool("heavy", weight=100), nodepool("chosen"), pod(node_selector={"karpenter.sh/nodepool": "chosen"}))
    assert result.nodeclaims[0].nodepool == "chosen"


def test_static_nodepool_never_launches():
    result = core(nodepool("static", replicas=3), pod())
    assert not result.nodeclaims and len(result.unschedulable) == 1


def test_limits_allow_a_node_that_fits():
    assert core(nodepool(limits={"cpu": "2"}), pod(cpu="1.75")).nodeclaims[0].instance_type == "small-instance-type"


def test_limits_exceeded_leave_pod_pending_with_reason():
    result = core(nodepool(limits={"cpu": "2"}), pod(cpu="2.1"))
    assert reasons(result)["default/pod"] == ('nodepool "default": every instance type large enough would exceed the '
                                              "nodepool's limits (remaining cpu=2)")


def test_limits_smaller_than_every_type_leave_pod_pending_with_reason():
    result = core(nodepool(limits={"cpu": "1"}), pod(cpu="100m"))
    assert reasons(result)["default/pod"] == 'nodepool "default": all available instance types exceed limits for nodepool'


def test_limits_let_only_part_of_the_pods_schedule():
    anti = term("kubernetes.io/hostname", {"app": "foo"})
    result = core(nodepool(limits={"cpu": "3"}), deployment("foo", replicas=2, cpu="1.5", labels={"app": "foo"}, anti_affinity=[anti]))
    assert (len(result.nodeclaims), len(result.unschedulable)) == (1, 1)


def test_limit_on_pods_excludes_types_with_more_capacity():
    result = core(nodepool(limits={"pods": "1"}), pod(resources={"fake.com/vendor-a": "1"}))
    assert len(result.unschedulable) == 1


def test_node_count_limit_stops_third_node():
    anti = term("kubernetes.io/hostname", {"app": "foo"})
    result = core(nodepool(limits={"nodes": "2"}), deployment("foo", replicas=3, cpu="1.5", labels={"app": "foo"}, anti_affinity=[anti]))
    assert len(result.nodeclaims) == 2 and "node limits have been exhausted" in result.unschedulable[0].reason


def test_limits_fall_through_to_next_nodepool():
    result = core(nodepool("capped", weight=10, limits={"cpu": "1"}), nodepool("spare"), pod(cpu="100m"))
    assert result.nodeclaims[0].nodepool == "spare"


# --- DaemonSets --------------------------------------------------------------------------------

def test_daemonset_overhead_is_counted_on_new_nodes():
    result = core(daemonset(cpu="2", memory="2Gi"), pod(cpu="1", memory="1Gi"))
    claim = result.nodeclaims[0]
    assert claim.instance_type == "default-instance-type" and claim.requests["cpu"] == 3000


def test_daemonset_overhead_is_counted_once_per_node():
    result = core(daemonset(cpu="1"), deployment("app", replicas=2, cpu="500m"))
    assert len(result.nodeclaims) == 1 and result.nodeclaims[0].requests["cpu"] == 2000


def test_daemonset_is_counted_with_startup_taint():
    result = core(nodepool(startup_taints=[taint("foo.com/taint")]), daemonset(cpu="2", memory="2Gi"), pod(cpu="1", memory="1Gi"))
    assert result.nodeclaims[0].instance_type == "default-instance-type"


def test_daemonset_overhead_too_large_leaves_pod_pending():
    result = core(daemonset(cpu="10000", memory="10000Gi"), pod())
    assert "DaemonSet overhead" in reasons(result)["default/pod"]


def test_daemonset_without_matching_toleration_is_ignored():
    result = core(nodepool(taints=[taint("foo", "bar")]), daemonset(cpu="2"),
                  pod(cpu="1", tolerations=[{"key": "foo", "operator": "Exists"}]))
    assert result.nodeclaims[0].requests["cpu"] == 1000


def test_daemonset_selecting_other_arch_is_ignored():
    result = core(daemonset(cpu="1", node_selector={ARCH: "arm64"}), pod(cpu="1", node_selector={ARCH: "amd64"}))
    assert result.nodeclaims[0].requests["cpu"] == 1000


def test_daemonset_with_custom_label_selector_matching_nodepool_is_counted():
    result = core(nodepool(labels={"team": "a"}), daemonset(cpu="1", node_selector={"team": "a"}), pod(cpu="1"))
    assert result.nodeclaims[0].requests["cpu"] == 2000


def test_daemonset_with_not_in_on_unknown_key_is_counted():
    result = core(daemonset(cpu="1", required=[[req("foo", "NotIn", "bar")]]), pod(cpu="1"))
    assert result.nodeclaims[0].requests["cpu"] == 2000


def test_daemonset_with_second_matching_affinity_term_is_counted():
    result = core(daemonset(cpu="1", required=[[req(ARCH, "In", "s390x")], [req(ARCH, "In", "amd64")]]),
                  pod(cpu="1", node_selector={ARCH: "amd64"}))
    assert result.nodeclaims[0].requests["cpu"] == 2000


def test_daemonset_tolerates_prefer_no_schedule_taints():
    result = core(nodepool(taints=[taint("x", effect="PreferNoSchedule")]), daemonset(cpu="1"), pod(cpu="1"))
    assert result.nodeclaims[0].requests["cpu"] == 2000


def test_daemonset_only_counted_on_instance_types_it_can_run_on():
    result = core(daemonset(cpu="3", node_selector={IT: "default-instance-type"}), pod(cpu="1500m"))
    claim = result.nodeclaims[0]
    assert (claim.instance_type, claim.requests["cpu"]) == ("small-instance-type", 1500)
