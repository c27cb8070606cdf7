"""The NodePool config models' validators called directly (no files, no render): boundaries and
both sides of every rule, so `make mutation` (cosmic-ray over the validators) judges each mutant in
about a second. Upstream: kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go and its CRD
(`maxItems: 100` requirements, `maxProperties: 100` labels, budgets' schedule/duration pairing,
`reasons` as a set)."""

import pytest
from pydantic import ValidationError

from components.config.karpenter_rules import MAX_LABELS
from components.config.nodeclasses import NodeClass
from components.config.nodepools import Budget, NodePool, Requirement, Taint

LIMITS = {"cpu": "10"}


def pool(**fields) -> NodePool:
    return NodePool.model_validate({"name": "pool", "limits": LIMITS, **fields})


def refused(model, data) -> str:
    with pytest.raises(ValidationError) as err:
        model.model_validate(data)
    return str(err.value)


def test_labels_up_to_the_cap_less_the_team_label_are_accepted():
    labels = {f"example.com/l{i}": "x" for i in range(MAX_LABELS - 1)}
    assert pool(labels=labels).labels == labels


@pytest.mark.parametrize("count", [MAX_LABELS, MAX_LABELS + 1])
def test_labels_beyond_the_room_the_team_label_leaves_are_refused(count):
    labels = {f"example.com/l{i}": "x" for i in range(count)}
    message = refused(NodePool, {"name": "pool", "limits": LIMITS, "labels": labels})
    assert f"{count} labels plus the team label; the NodePool CRD allows at most {MAX_LABELS}" in message


def test_budget_duration_without_schedule_is_refused_and_schedule_without_duration_too():
    assert "schedule and duration must be set together" in refused(Budget, {"duration": "1h"})
    assert "schedule and duration must be set together" in refused(Budget, {"schedule": "0 9 * * *"})
    both = Budget.model_validate({"schedule": "0 9 * * *", "duration": "1h"})
    assert (both.schedule, both.duration) == ("0 9 * * *", "1h")
    assert (Budget().schedule, Budget().duration) == (None, None)


def test_budget_reasons_twice_are_refused_distinct_or_null_accepted():
    assert "list a reason twice" in refused(Budget, {"reasons": ["Empty", "Drifted", "Empty"]})
    assert Budget.model_validate({"reasons": ["Empty", "Drifted"]}).reasons == ["Empty", "Drifted"]
    assert Budget.model_validate({"reasons": None}).reasons is None


def test_termination_grace_period_never_is_refused_a_duration_accepted():
    assert "terminationGracePeriod cannot be Never" in refused(
        NodePool, {"name": "pool", "limits": LIMITS, "terminationGracePeriod": "Never"})
    assert pool(terminationGracePeriod="48h").termination_grace_period == "48h"


def test_kubelet_refused_label_keys_are_refused_only_where_they_become_node_labels():
    """Only `In` puts the key on the node (Karpenter's ValidateRequirement checks label syntax there);
    NotIn/Exists only select."""
    key = "node-restriction.kubernetes.io/pool"
    assert "kubelet refuses as a node label" in refused(Requirement, {"key": key, "operator": "In", "values": ["a"]})
    assert Requirement.model_validate({"key": key, "operator": "Exists"}).operator == "Exists"
    assert Requirement.model_validate({"key": key, "operator": "NotIn", "values": ["a"]}).values == ["a"]


def test_unknown_capacity_type_values_are_refused_under_in_only():
    key = "karpenter.sh/capacity-type"
    assert "'ondemand' not valid for karpenter.sh/capacity-type" in refused(
        Requirement, {"key": key, "operator": "In", "values": ["ondemand"]})
    assert Requirement.model_validate({"key": key, "operator": "NotIn", "values": ["ondemand"]}).values == ["ondemand"]


def test_weight_bounds_are_the_crds_1_to_100():
    assert pool(weight=100).weight == 100
    assert pool(weight=1).weight == 1
    assert "less than or equal to 100" in refused(NodePool, {"name": "pool", "limits": LIMITS, "weight": 101})
    assert "greater than or equal to 1" in refused(NodePool, {"name": "pool", "limits": LIMITS, "weight": 0})


def test_notin_without_values_is_accepted_only_in_needs_one():
    """The NodePool CRD's rule asks values only of `In` (kubernetes-sigs/karpenter v1.14.1
    pkg/apis/crds/karpenter.sh_nodepools.yaml: "requirements with operator 'In' must have a value defined")."""
    assert Requirement.model_validate({"key": "example.com/x", "operator": "NotIn"}).values == []
    assert "operator In needs at least one value" in refused(Requirement, {"key": "example.com/x", "operator": "In"})


def test_min_values_equal_to_the_in_values_is_accepted_above_it_refused():
    ok = Requirement.model_validate({"key": "example.com/x", "operator": "In", "values": ["a", "b"], "minValues": 2})
    assert ok.min_values == 2
    more = Requirement.model_validate({"key": "example.com/x", "operator": "In", "values": ["a", "b", "c"], "minValues": 2})
    assert more.values == ["a", "b", "c"]
    assert "minValues 3 needs at least that many values" in refused(
        Requirement, {"key": "example.com/x", "operator": "In", "values": ["a", "b"], "minValues": 3})


def test_min_values_is_bounded_by_the_values_only_under_in():
    """The CRD rule bounds minValues by the values only for `In`; NotIn values are exclusions."""
    notin = Requirement.model_validate({"key": "example.com/x", "operator": "NotIn", "values": ["a"], "minValues": 2})
    assert notin.min_values == 2


def test_min_values_cap_is_the_crds_50():
    assert Requirement.model_validate({"key": "example.com/x", "operator": "Exists", "minValues": 50}).min_values == 50
    assert "less than or equal to 50" in refused(Requirement, {"key": "example.com/x", "operator": "Exists", "minValues": 51})
    assert Requirement.model_validate({"key": "example.com/x", "operator": "Exists", "minValues": 1}).min_values == 1
    assert "greater than or equal to 1" in refused(Requirement, {"key": "example.com/x", "operator": "Exists", "minValues": 0})


def test_gt_takes_exactly_one_integer_value():
    assert Requirement.model_validate({"key": "example.com/x", "operator": "Gt", "values": ["3"]}).values == ["3"]
    for values in ([], ["3", "4"], ["x"]):
        assert "takes exactly one non-negative integer value" in refused(
            Requirement, {"key": "example.com/x", "operator": "Gt", "values": values})


def test_requirements_up_to_100_are_accepted_101_refused():
    reqs = [{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)]
    assert len(pool(requirements=reqs[:100]).requirements) == 100
    assert "101 requirements; the NodePool CRD allows at most 100" in refused(
        NodePool, {"name": "pool", "limits": LIMITS, "requirements": reqs})


def test_taint_time_added_must_be_rfc3339():
    assert Taint.model_validate({"key": "k", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}).time_added == \
        "2025-01-01T00:00:00Z"
    assert "is not an RFC 3339 date-time" in refused(Taint, {"key": "k", "effect": "NoExecute", "timeAdded": "yesterday"})


def test_labels_kubelet_refuses_are_refused():
    assert "kubelet refuses as a node label" in refused(
        NodePool, {"name": "pool", "limits": LIMITS, "labels": {"example.com/ok": "1", "node-restriction.kubernetes.io/x": "a"}})
    assert pool(labels={"node.kubernetes.io/role": "a"}).labels == {"node.kubernetes.io/role": "a"}


# --- EC2NodeClass models ---------------------------------------------------------------------

def test_al2023_alias_without_v_is_refused_with_v_accepted():
    assert "AL2023 versions start with 'v'" in refused(NodeClass, {"amiAlias": "al2023@20251117"})
    assert NodeClass.model_validate({"amiAlias": "al2023@v20251117"}).ami_alias == "al2023@v20251117"


def test_a_single_primary_network_interface_is_accepted_a_secondary_alone_refused():
    primary = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert len(NodeClass.model_validate({"networkInterfaces": [primary]}).network_interfaces) == 1
    assert "must include a primary interface" in refused(
        NodeClass, {"networkInterfaces": [{**primary, "deviceIndex": 1}]})


def test_eviction_grace_period_without_soft_threshold_names_only_the_unmatched_signal():
    message = refused(NodeClass, {"kubelet": {"evictionSoft": {"memory.available": "500Mi"},
                                              "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "1m"}}})
    assert "evictionSoftGracePeriod nodefs.available has no matching evictionSoft" in message


def test_security_group_terms_up_to_30_are_accepted_31_refused():
    terms = [{"id": f"sg-{i:017x}"} for i in range(31)]
    assert len(NodeClass.model_validate({"securityGroupSelectorTerms": terms[:30]}).security_group_selector_terms) == 30
    assert "at most 30 items" in refused(NodeClass, {"securityGroupSelectorTerms": terms})


INT32_MAX = 2**31 - 1


@pytest.mark.parametrize("settings_at_bound, settings_beyond, message", [
    ({"kubelet": {"evictionMaxPodGracePeriod": INT32_MAX}}, {"kubelet": {"evictionMaxPodGracePeriod": INT32_MAX + 1}}, "less than or equal to 2147483647"),
    ({"kubelet": {"evictionMaxPodGracePeriod": -(2**31)}}, {"kubelet": {"evictionMaxPodGracePeriod": -(2**31) - 1}}, "greater than or equal to -2147483648"),
    ({"kubelet": {"podsPerCore": INT32_MAX}}, {"kubelet": {"podsPerCore": INT32_MAX + 1}}, "less than or equal to 2147483647"),
    ({"kubelet": {"podsPerCore": 0}}, {"kubelet": {"podsPerCore": -1}}, "greater than or equal to 0"),
    ({"kubelet": {"imageGCLowThresholdPercent": 100}}, {"kubelet": {"imageGCLowThresholdPercent": 101}}, "less than or equal to 100"),
    ({"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
      + [{"networkCardIndex": i, "deviceIndex": 1, "interfaceType": "efa-only"} for i in range(1, 150)]},
     {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
      + [{"networkCardIndex": i, "deviceIndex": 1, "interfaceType": "efa-only"} for i in range(1, 151)]}, "at most 150 items"),
])
def test_ec2nodeclass_numeric_bounds_are_the_crds(settings_at_bound, settings_beyond, message):
    """Bounds from aws/karpenter-provider-aws v1.14.1 pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml
    (int32 kubelet fields, percentages 0-100, at most 150 network interfaces)."""
    assert NodeClass.model_validate(settings_at_bound) is not None
    assert message in refused(NodeClass, settings_beyond)


def test_eviction_soft_with_its_grace_period_is_accepted():
    kubelet = {"evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "1m"}}
    assert NodeClass.model_validate({"kubelet": kubelet}).kubelet.eviction_soft == {"memory.available": "500Mi"}
    assert "evictionSoft memory.available has no matching evictionSoftGracePeriod" in refused(
        NodeClass, {"kubelet": {"evictionSoft": {"memory.available": "500Mi"}}})


def test_eviction_soft_grace_period_values_must_be_go_durations():
    kubelet = {"evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "soon"}}
    assert "memory.available: 'soon' is not a duration (e.g. 1m30s)" in refused(NodeClass, {"kubelet": kubelet})


def test_tag_keys_up_to_128_and_values_up_to_256_characters_are_accepted():
    """EC2 tag limits (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions)."""
    assert NodeClass.model_validate({"tags": {"k" * 128: "v" * 256}}).tags == {"k" * 128: "v" * 256}
    for tags in ({"k" * 129: "v"}, {"k": "v" * 257}):
        assert "EC2 allows keys of at most 128 and values of at most 256 characters" in refused(NodeClass, {"tags": tags})
    # The message shows the key's first 40 characters, not all 129.
    assert f"tag {'k' * 40!r}: EC2 allows" in refused(NodeClass, {"tags": {"k" * 129: "v"}})


def test_subnet_terms_up_to_30_are_accepted_31_refused():
    terms = [{"id": f"subnet-{i:017x}"} for i in range(31)]
    assert len(NodeClass.model_validate({"subnetSelectorTerms": terms[:30]}).subnet_selector_terms) == 30
    assert "at most 30 items" in refused(NodeClass, {"subnetSelectorTerms": terms})


def test_a_percentage_eviction_threshold_that_is_no_number_is_refused_with_the_kubelet_message():
    assert "memory.available: 'abc%' is not a threshold kubelet accepts" in refused(
        NodeClass, {"kubelet": {"evictionHard": {"memory.available": "abc%"}}})


def test_root_volume_throughput_bounds_are_gp3s_125_to_1000():
    # 1000 MiB/s needs 4,000 IOPS (EC2 allows 0.25 MiB/s per IOPS)
    assert NodeClass.model_validate({"rootVolume": {"throughput": 1000, "iops": 4000}}).root_volume.throughput == 1000
    assert NodeClass.model_validate({"rootVolume": {"throughput": 125}}).root_volume.throughput == 125
    assert "less than or equal to 1000" in refused(NodeClass, {"rootVolume": {"throughput": 1001}})
    assert "greater than or equal to 125" in refused(NodeClass, {"rootVolume": {"throughput": 124}})


def test_block_device_mappings_one_root_volume_and_at_most_50():
    def device(i, root=False):
        return {"deviceName": f"/dev/xvd{i}", "rootVolume": root, "ebs": {"volumeSize": "20Gi"}}

    assert "must have only one blockDeviceMappings with rootVolume" in refused(
        NodeClass, {"blockDeviceMappings": [device("a", True), device("b", True)]})
    fifty = [device("a", True)] + [device(f"b{i}") for i in range(49)]
    assert len(NodeClass.model_validate({"blockDeviceMappings": fifty}).block_device_mappings) == 50
    assert "at most 50 items" in refused(NodeClass, {"blockDeviceMappings": fifty + [device("c")]})


@pytest.mark.parametrize("kubelet, message", [
    ({"maxPods": INT32_MAX + 1}, "less than or equal to 2147483647"),
    ({"evictionHard": {"memory.available": "100.5%"}}, "is not a threshold kubelet accepts"),
    ({"evictionHard": {"memory.available": "-1%"}}, "is not a threshold kubelet accepts"),
    ({"evictionHard": {"memory.available": "5e1%"}}, "is not a threshold kubelet accepts"),  # float() takes it, kubelet not
    ({"evictionHard": {"memory.available": "1_0%"}}, "is not a threshold kubelet accepts"),
    ({"evictionHard": {"memory.available": "lots"}}, "is not a threshold kubelet accepts"),  # neither % nor quantity
])
def test_kubelet_values_beyond_the_crd_are_refused(kubelet, message):
    assert message in refused(NodeClass, {"kubelet": kubelet})


@pytest.mark.parametrize("threshold", ["0%", "0.5%", "10%", "100%", "100Mi", "1Gi"])
def test_kubelet_eviction_thresholds_as_percentages_or_quantities_are_accepted(threshold):
    nc = NodeClass.model_validate({"kubelet": {"maxPods": INT32_MAX, "evictionHard": {"memory.available": threshold}}})
    assert nc.kubelet.eviction_hard == {"memory.available": threshold}


def test_ip_prefix_count_is_an_int32():
    assert NodeClass.model_validate({"ipPrefixCount": INT32_MAX}).ip_prefix_count == INT32_MAX
    assert "less than or equal to 2147483647" in refused(NodeClass, {"ipPrefixCount": INT32_MAX + 1})


def test_alias_versions_without_v_are_refused_only_for_al2023():
    assert NodeClass.model_validate({"amiAlias": "bottlerocket@1.20.0"}).ami_alias == "bottlerocket@1.20.0"


@pytest.mark.parametrize("volume, message", [
    ({"type": "gp2", "iops": 3000}, "iops cannot be set on gp2"),
    ({"type": "io1"}, "io1 needs iops (provisioned IOPS volume)"),
    ({"type": "io2", "throughput": 200, "iops": 3000}, "throughput can only be set on gp3, not io2"),
])
def test_root_volume_combinations_ec2_refuses(volume, message):
    assert message in refused(NodeClass, {"rootVolume": volume})


@pytest.mark.parametrize("volume", [{"type": "io2", "iops": 3000}, {"type": "gp3", "iops": 3000, "throughput": 125},
                                    {"type": "gp2"}])
def test_root_volume_combinations_ec2_accepts(volume):
    assert NodeClass.model_validate({"rootVolume": volume}).root_volume.type == volume["type"]


def test_network_interfaces_may_not_repeat_a_card_and_device_pair():
    primary = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    message = refused(NodeClass, {"networkInterfaces": [primary, {**primary}]})
    assert "must not have duplicate networkCardIndex and deviceIndex pairs" in message


def test_static_pool_replicas_may_be_zero_not_negative():
    assert NodePool.model_validate({"name": "pool", "replicas": 0, "limits": {"nodes": "1"}}).replicas == 0
    assert "greater than or equal to 0" in refused(NodePool, {"name": "pool", "replicas": -1, "limits": {"nodes": "1"}})


def test_pool_annotation_keys_the_api_server_refuses_are_refused():
    message = refused(NodePool, {"name": "pool", "limits": LIMITS, "annotations": {"bad key!": "x"}})
    assert "bad key!" in message
    assert pool(annotations={"example.com/note": "x"}).annotations == {"example.com/note": "x"}


def test_the_same_taint_in_taints_and_startup_taints_is_refused():
    """kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/nodepool_validation.go validateTaints: a key/effect
    pair once across taints and startupTaints."""
    taint = {"key": "example.com/t", "effect": "NoSchedule"}
    message = refused(NodePool, {"name": "pool", "limits": LIMITS, "taints": [taint], "startupTaints": [taint]})
    assert "appears twice across taints and startupTaints" in message
    assert len(pool(taints=[taint], startupTaints=[{**taint, "effect": "NoExecute"}]).startup_taints) == 1
