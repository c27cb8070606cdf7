"""Generated Karpenter objects against the v1.14.1 CRDs: served openAPIV3Schema (jsonschema) and
the CEL rules (cel-python), for every object of every shipped stack, and the validator itself."""

import copy

import pytest

from components.crds import CrdValidator
from components.nodeclasses import nodeclass_manifest
from components.nodepools import nodepool_manifest
from components.odigos import node_overlay
from offline.checks import check_capture
from tests.harness import MINIMAL_POOL, STACKS, platform_from, render, shared


@pytest.fixture(scope="module")
def validator():
    return CrdValidator(shared("reference/karpenter/crds"))


@pytest.fixture(scope="module")
def nodepool():
    platform = platform_from(teams={"web": {"name": "web", "nodePools": [{**MINIMAL_POOL, "preset": "general"}]}})
    return nodepool_manifest(platform.teams[0], platform.teams[0].node_pools[0])


@pytest.fixture(scope="module")
def nodeclass():
    platform = platform_from()
    return nodeclass_manifest("default", platform.settings.node_classes["default"], cluster_name="c", role="KarpenterNodeRole-c")


def messages(validator, manifest):
    return [str(v) for v in validator.validate(manifest)]


@pytest.mark.parametrize("stack", STACKS)
def test_every_karpenter_object_of_every_stack_is_valid(stack, validator):
    karpenter_objects = [r.inputs for r in render(stack).resources
                         if r.inputs.get("apiVersion", "").split("/")[0] in ("karpenter.sh", "karpenter.k8s.aws")]
    assert len(karpenter_objects) >= 6  # 2 node classes + the stack's NodePools (+ NodeOverlay)
    assert {f"{m['kind']}/{m['metadata']['name']}": messages(validator, m) for m in karpenter_objects} == {
        f"{m['kind']}/{m['metadata']['name']}": [] for m in karpenter_objects}


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.slow
def test_render_passes_every_upstream_check(stack):
    shared("reference/karpenter/chart-values.yaml")
    assert check_capture(render(stack)) == []


def test_every_cel_rule_of_the_crds_compiles(validator):
    rules = validator.rules()
    assert len(rules) == 92
    # Transition rules (oldSelf) run on updates only: NodeClaim spec immutability, NodePool static/dynamic
    # mode and nodeClassRef group/kind immutability.
    assert sorted(r.kind for r in rules if r.transition) == ["NodeClaim", "NodePool", "NodePool", "NodePool"]
    supported = validator.cel.supported()
    for rule in rules:
        validator.cel.program(rule.rule)  # parses
        assert validator.cel.called(rule.rule) <= supported, rule  # and every function it calls exists


def test_a_rule_calling_a_missing_function_is_an_evaluator_error_not_a_violation(validator):
    with pytest.raises(RuntimeError, match="lacks"):
        validator.cel.holds("self.lowerAscii() == 'a'", "A")


def test_valid_builders_output_has_no_violation(validator, nodepool, nodeclass):
    assert messages(validator, nodepool) == []
    assert messages(validator, nodeclass) == []


def _with(manifest, path, value):
    changed = copy.deepcopy(manifest)
    node = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


TEMPLATE = ("spec", "template", "spec")


@pytest.mark.parametrize("key, message", [
    ("karpenter.sh/foo", 'label domain "karpenter.sh" is restricted'),
    ("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
    ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
    ("karpenter.k8s.aws/foo", 'label domain "karpenter.k8s.aws" is restricted'),
])
def test_cel_restricted_label_domains_on_template_labels_are_refused(validator, nodepool, key, message):
    manifest = _with(nodepool, ("spec", "template", "metadata", "labels", key), "x")
    assert f"spec.template.metadata.labels: {message}" in messages(validator, manifest)


def test_cel_restricted_label_domain_on_requirement_key_is_refused(validator, nodepool):
    manifest = _with(nodepool, (*TEMPLATE, "requirements"), [{"key": "karpenter.sh/foo", "operator": "Exists"}])
    assert 'spec.template.spec.requirements[0].key: label domain "karpenter.sh" is restricted' in messages(validator, manifest)


def test_cel_allowed_karpenter_labels_pass(validator, nodepool):
    manifest = _with(nodepool, (*TEMPLATE, "requirements"), [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]},
    ])
    assert messages(validator, manifest) == []


def test_cel_in_without_values_is_refused(validator, nodepool):
    manifest = _with(nodepool, (*TEMPLATE, "requirements"), [{"key": "kubernetes.io/arch", "operator": "In", "values": []}])
    assert "spec.template.spec.requirements: requirements with operator 'In' must have a value defined" in messages(validator, manifest)


@pytest.mark.parametrize("values", [["a"], ["1", "2"], ["-1"]])
def test_cel_gt_needs_one_non_negative_integer(validator, nodepool, values):
    manifest = _with(nodepool, (*TEMPLATE, "requirements"),
                     [{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": values}])
    assert ("spec.template.spec.requirements: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single "
            "positive integer value") in messages(validator, manifest)


def test_cel_min_values_above_value_count_is_refused(validator, nodepool):
    manifest = _with(nodepool, (*TEMPLATE, "requirements"),
                     [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i", "c7i"], "minValues": 3}])
    assert ("spec.template.spec.requirements: requirements with 'minValues' must have at least that many values "
            "specified in the 'values' field") in messages(validator, manifest)


def test_cel_budget_schedule_without_duration_is_refused(validator, nodepool):
    manifest = _with(nodepool, ("spec", "disruption", "budgets"), [{"nodes": "0", "schedule": "@daily"}])
    assert "spec.disruption.budgets: 'schedule' must be set with 'duration'" in messages(validator, manifest)


def test_cel_empty_node_class_ref_name_is_refused(validator, nodepool):
    manifest = _with(nodepool, (*TEMPLATE, "nodeClassRef", "name"), "")
    assert "spec.template.spec.nodeClassRef.name: name may not be empty" in messages(validator, manifest)


def test_schema_weight_zero_is_refused(validator, nodepool):
    assert "spec.weight: 0 is less than the minimum of 1" in messages(validator, _with(nodepool, ("spec", "weight"), 0))


def test_unknown_field_is_refused_not_pruned(validator, nodepool):
    manifest = _with(nodepool, ("spec", "disruption", "consolidateAftr"), "1m")
    assert any("'consolidateAftr' was unexpected" in m for m in messages(validator, manifest))


def test_defaults_are_applied_before_validation(validator, nodepool):
    # consolidateAfter is required, but the API server defaults it (0s) when disruption is absent.
    manifest = copy.deepcopy(nodepool)
    del manifest["spec"]["disruption"]
    assert messages(validator, manifest) == []


def test_int_or_string_limits_accept_integers_and_quantities(validator, nodepool):
    assert messages(validator, _with(nodepool, ("spec", "limits"), {"cpu": 100, "memory": "400Gi"})) == []
    assert "spec.limits.cpu: 'lots' does not match" in " ".join(messages(validator, _with(nodepool, ("spec", "limits"), {"cpu": "lots"})))


def test_cel_ec2nodeclass_unsupported_alias_family_is_refused(validator, nodeclass):
    manifest = _with(nodeclass, ("spec", "amiSelectorTerms"), [{"alias": "ubuntu@latest"}])
    assert any("family is not supported" in m for m in messages(validator, manifest))


def test_cel_ec2nodeclass_two_root_volumes_are_refused(validator, nodeclass):
    mapping = nodeclass["spec"]["blockDeviceMappings"][0]
    manifest = _with(nodeclass, ("spec", "blockDeviceMappings"), [mapping, {**mapping, "deviceName": "/dev/xvdb"}])
    assert "spec.blockDeviceMappings: must have only one blockDeviceMappings with rootVolume" in messages(validator, manifest)


def test_cel_ec2nodeclass_restricted_tag_is_refused(validator, nodeclass):
    manifest = _with(nodeclass, ("spec", "tags", "kubernetes.io/cluster/acme"), "owned")
    assert "spec.tags: tag contains a restricted tag matching kubernetes.io/cluster/" in messages(validator, manifest)


def test_cel_ec2nodeclass_role_and_instance_profile_are_exclusive(validator, nodeclass):
    manifest = _with(nodeclass, ("spec", "instanceProfile"), "profile")
    assert "spec: must specify exactly one of ['role', 'instanceProfile']" in messages(validator, manifest)


def test_cel_ec2nodeclass_empty_subnet_selector_is_refused(validator, nodeclass):
    manifest = _with(nodeclass, ("spec", "subnetSelectorTerms"), [])
    assert "spec.subnetSelectorTerms: subnetSelectorTerms cannot be empty" in messages(validator, manifest)


def test_cel_node_overlay_cannot_touch_cpu(validator):
    platform = platform_from(settings={"odigos": {"enabled": True, "mountMethod": "k8s-virtual-device"}})
    overlay = node_overlay(platform.settings.odigos, ["web-api"])
    assert messages(validator, overlay) == []
    assert "spec.capacity: invalid resource restricted" in messages(validator, _with(overlay, ("spec", "capacity"), {"cpu": "1"}))


def test_metadata_name_must_be_a_dns_subdomain(validator, nodepool):
    assert "metadata.name: 'Web_API' is not a DNS-1123 subdomain" in messages(
        validator, _with(nodepool, ("metadata", "name"), "Web_API"))


def test_unserved_version_is_reported(validator, nodepool):
    assert messages(validator, {**nodepool, "apiVersion": "karpenter.sh/v1beta1"}) == [
        "<root>: no served CRD version for NodePool karpenter.sh/v1beta1"]
