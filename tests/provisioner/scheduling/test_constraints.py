"""suite_test.go: Custom Constraints, Well Known Labels, Scheduling Logic, Preferential Fallback."""
import pytest

from tests.provisioner.prov_builders import (karpenter_default_types, nodeclaim_of, nodepool, pod, reasons, req, run, run_core)

ZONE = "topology.kubernetes.io/zone"
IT = "node.kubernetes.io/instance-type"
TYPES = karpenter_default_types()


def core(*objects, **kwargs):
    return run_core(*objects, types=TYPES, **kwargs)


def scheduled(result, name="default/pod"):
    return nodeclaim_of(result, name) is not None


# --- NodePool with labels -----------------------------------------------------------------------

def test_unconstrained_pod_schedules_and_node_gets_nodepool_labels():
    result = core(nodepool(labels={"test-key": "test-value"}), pod())
    assert nodeclaim_of(result, "default/pod").labels["test-key"] == "test-value"


def test_conflicting_node_selector_is_not_scheduled():
    result = core(nodepool(labels={"test-key": "test-value"}), pod(node_selector={"test-key": "different-value"}))
    assert not scheduled(result)


def test_node_selector_on_undefined_custom_label_is_not_scheduled_with_reason():
    result = core(nodepool(), pod(node_selector={"test-key": "test-value"}))
    assert reasons(result)["default/pod"] == \
        'nodepool "default": incompatible requirements, label "test-key" does not have known values'


def test_matching_requirement_schedules_with_label_value():
    result = core(nodepool(labels={"test-key": "test-value"}),
                  pod(required=[[req("test-key", "In", "test-value", "another-value")]]))
    assert nodeclaim_of(result, "default/pod").labels["test-key"] == "test-value"


def test_conflicting_requirement_is_not_scheduled():
    result = core(nodepool(labels={"test-key": "test-value"}), pod(required=[[req("test-key", "In", "another-value")]]))
    assert not scheduled(result)


# --- Well-known labels --------------------------------------------------------------------------

def test_nodepool_zone_constraint_is_used():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-2")]), pod())
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-2"


def test_node_selector_zone_is_used():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")]),
                  pod(node_selector={ZONE: "test-zone-2"}))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-2"


def test_hostname_node_selector_is_not_scheduled():
    assert not scheduled(core(pod(node_selector={"kubernetes.io/hostname": "red-node"})))


def test_unknown_zone_node_selector_is_not_scheduled():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1")]), pod(node_selector={ZONE: "unknown"}))
    assert not scheduled(result)


def test_node_selector_outside_nodepool_constraints_is_not_scheduled():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1")]), pod(node_selector={ZONE: "test-zone-2"}))
    assert "not in" in reasons(result)["default/pod"]


def test_requirement_in_operator_selects_zone():
    result = core(pod(required=[[req(ZONE, "In", "test-zone-3")]]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-3"


def test_requirement_gt_operator_selects_larger_instance_type():
    result = run(pod(required=[[req("karpenter.k8s.aws/instance-cpu", "Gt", "8")]]))
    assert nodeclaim_of(result, "default/pod").instance_type == "m5.4xlarge"


def test_requirement_lt_operator_selects_smaller_instance_type():
    result = run(pod(cpu="100m", required=[[req("karpenter.k8s.aws/instance-cpu", "Lt", "4")]]))
    assert nodeclaim_of(result, "default/pod").labels["karpenter.k8s.aws/instance-cpu"] == "2"


def test_requirement_in_unknown_zone_is_not_scheduled():
    assert not scheduled(core(pod(required=[[req(ZONE, "In", "unknown")]])))


def test_requirement_not_in_leaves_remaining_zone():
    result = core(pod(required=[[req(ZONE, "NotIn", "test-zone-1", "test-zone-2", "unknown")]]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-3"


def test_requirement_not_in_every_zone_is_not_scheduled():
    assert not scheduled(core(pod(required=[[req(ZONE, "NotIn", "test-zone-1", "test-zone-2", "test-zone-3", "unknown")]])))


def test_compatible_preference_narrows_requirement():
    result = core(pod(required=[[req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3", "unknown")]],
                      preferred=[(1, [req(ZONE, "In", "test-zone-2", "unknown")])]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-2"


def test_incompatible_preference_is_relaxed_and_pod_scheduled():
    result = core(pod(required=[[req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3")]],
                      preferred=[(1, [req(ZONE, "In", "unknown")])]))
    assert scheduled(result)


def test_compatible_not_in_preference_narrows_requirement():
    result = core(pod(required=[[req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3", "unknown")]],
                      preferred=[(1, [req(ZONE, "NotIn", "test-zone-1", "test-zone-3")])]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-2"


def test_node_selector_preference_and_requirement_combine():
    result = core(pod(node_selector={ZONE: "test-zone-3", IT: "arm-instance-type"},
                      required=[[req(ZONE, "In", "test-zone-1", "test-zone-3"),
                                 req(IT, "In", "default-instance-type", "arm-instance-type")]],
                      preferred=[(1, [req(ZONE, "NotIn", "unknown"), req(IT, "NotIn", "unknown")])]))
    claim = nodeclaim_of(result, "default/pod")
    assert (claim.zone, claim.instance_type) == ("test-zone-3", "arm-instance-type")


def test_restricted_karpenter_domain_selector_is_not_scheduled():
    assert not scheduled(core(pod(node_selector={"karpenter.sh/custom": "x"})))


def test_well_known_nodepool_label_selects_that_nodepool():
    result = core(nodepool("a"), nodepool("b"), pod(node_selector={"karpenter.sh/nodepool": "b"}))
    assert nodeclaim_of(result, "default/pod").nodepool == "b"


# --- Scheduling logic: operators on a custom label --------------------------------------------

@pytest.mark.parametrize("operator,values,expected", [
    ("In", ["test-value"], False), ("NotIn", ["test-value"], True), ("Exists", [], False), ("DoesNotExist", [], True)])
def test_operator_on_undefined_custom_key_schedules_only_when_it_excludes(operator, values, expected):
    assert scheduled(core(pod(required=[[req("test-key", operator, *values)]]))) is expected


@pytest.mark.parametrize("operator,values,expected", [
    ("In", ["test-value"], True), ("NotIn", ["test-value"], False), ("Exists", [], True),
    ("DoesNotExist", [], False), ("In", ["other"], False), ("NotIn", ["other"], True)])
def test_operator_on_defined_custom_key_schedules_when_label_matches(operator, values, expected):
    result = core(nodepool(labels={"test-key": "test-value"}), pod(required=[[req("test-key", operator, *values)]]))
    assert scheduled(result) is expected


def test_compatible_pods_share_a_node():
    result = core(nodepool(requirements=[("test-key", "In", "test-value", "another-value")]),
                  pod("a", required=[[req("test-key", "In", "test-value")]]),
                  pod("b", required=[[req("test-key", "NotIn", "another-value")]]))
    a, b = nodeclaim_of(result, "default/a"), nodeclaim_of(result, "default/b")
    assert a is b and a.labels["test-key"] == "test-value"


def test_incompatible_pods_get_different_nodes():
    result = core(nodepool(requirements=[("test-key", "In", "test-value", "another-value")]),
                  pod("a", required=[[req("test-key", "In", "test-value")]]),
                  pod("b", required=[[req("test-key", "In", "another-value")]]))
    a, b = nodeclaim_of(result, "default/a"), nodeclaim_of(result, "default/b")
    assert a is not b and (a.labels["test-key"], b.labels["test-key"]) == ("test-value", "another-value")


def test_exists_operator_does_not_overwrite_impossible_value():
    assert not scheduled(core(pod(required=[[req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists")]])))


# --- Preferential fallback ----------------------------------------------------------------------

def test_final_required_term_is_not_relaxed():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1"), (IT, "In", "default-instance-type")]),
                  pod(required=[[req(ZONE, "In", "invalid")]]))
    assert not scheduled(result)


def test_required_terms_are_relaxed_in_order():
    result = core(pod(required=[[req(ZONE, "In", "invalid")], [req(ZONE, "In", "invalid")],
                                [req(ZONE, "In", "test-zone-1")], [req(ZONE, "In", "test-zone-2")]]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-1"


def test_all_preferred_terms_can_be_relaxed():
    result = core(pod(preferred=[(1, [req(ZONE, "In", "invalid")]), (1, [req(IT, "In", "invalid")])]))
    assert scheduled(result)


def test_relaxation_falls_back_to_lighter_preferences():
    result = core(nodepool(requirements=[(ZONE, "In", "test-zone-1", "test-zone-2")]),
                  pod(preferred=[(100, [req(IT, "In", "test-zone-3")]), (50, [req(ZONE, "In", "test-zone-2")]),
                                 (1, [req(ZONE, "In", "test-zone-1")])]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-2"


def test_preference_conflicting_with_requirement_is_dropped():
    result = core(pod(preferred=[(1, [req(ZONE, "NotIn", "test-zone-3")])], required=[[req(ZONE, "In", "test-zone-3")]]))
    assert nodeclaim_of(result, "default/pod").zone == "test-zone-3"


def test_self_conflicting_preference_is_dropped():
    result = core(pod(preferred=[(1, [req(ZONE, "In", "invalid"), req(ZONE, "NotIn", "invalid")])]))
    assert scheduled(result)


# --- Provider-specific labels --------------------------------------------------------------------

def test_optional_provider_label_exists_selects_types_that_have_it():
    result = run(pod(cpu="100m", required=[[req("karpenter.k8s.aws/instance-gpu-count", "Exists")]]))
    assert nodeclaim_of(result, "default/pod").instance_type == "g4dn.xlarge"


def test_optional_provider_label_does_not_exist_excludes_types_that_have_it():
    result = run(pod(cpu="100m", required=[[req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist")]]))
    claim = nodeclaim_of(result, "default/pod")
    assert not any(name.startswith("g") for name in claim.instance_type_options)


def test_provider_label_and_instance_type_that_conflict_are_not_scheduled():
    result = run(pod(node_selector={"karpenter.k8s.aws/instance-family": "c5", IT: "m5.large"}))
    assert len(result.unschedulable) == 1
