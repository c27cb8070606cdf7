"""The Karpenter v1.14.1 settings issue 11 found refused, now expressible, with the CRD's and
Karpenter's own rules. Upstream: kubernetes-sigs/karpenter pkg/apis/v1/nodeclaim_validation.go
(ValidateRequirement), pkg/apis/crds/karpenter.sh_nodepools.yaml and karpenter.sh_nodeoverlays.yaml
(CEL rules); aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml and
pkg/providers/amifamily/{al2023,bottlerocket,windows,custom}.go (default block devices)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from components.config import ConfigError
from components.platform import load_platform
from kubefacts.labels import check_label_value
from components.config.teams import Team
from components.karpenter import feature_gates
from components.nodeclasses import nodeclass_manifest
from components.nodeoverlays import nodeoverlay_manifests
from components.nodepools import nodepool_manifest
from tests.harness import MINIMAL_POOL, MINIMAL_SETTINGS, platform_from, run_component, shared, write_project


def pool(settings=None, **changes):
    platform = platform_from(settings=settings,
                             teams={"web": {"name": "web", "nodePools": [{**copy.deepcopy(MINIMAL_POOL), **changes}]}})
    return nodepool_manifest(platform.teams[0], platform.teams[0].node_pools[0])["spec"]


def errors(tmp_path, pool_changes=None, node_class=None, team_extra=None):
    settings = {**MINIMAL_SETTINGS, "teams": ["web"]}
    if node_class is not None:
        settings["nodeClasses"] = {"default": node_class}
    team = {"name": "web", "nodePools": [{**copy.deepcopy(MINIMAL_POOL), **(pool_changes or {})}], **(team_extra or {})}
    with pytest.raises(ConfigError) as caught:
        load_platform(write_project(tmp_path, settings, {"web": team}), "test")
    return [str(issue) for issue in caught.value.issues]


def node_class(settings):
    platform = platform_from(settings={"nodeClasses": {"nc": settings}})
    return nodeclass_manifest("nc", platform.settings.node_classes["nc"], cluster_name="acme", role="node-role")["spec"]


# --- NodePool ---------------------------------------------------------------------------------

def test_balanced_consolidation_and_gte_lte_operators_render():
    spec = pool(disruption={"consolidationPolicy": "Balanced"},
                requirements=[{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4"]},
                              {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["32"]}])
    assert spec["disruption"]["consolidationPolicy"] == "Balanced"
    assert [r["operator"] for r in spec["template"]["spec"]["requirements"]] == ["Gte", "Lte"]


def test_omitted_consolidate_after_renders_the_crd_default_0s():
    """karpenter.sh_nodepools.yaml: spec.disruption defaults to {consolidateAfter: 0s}."""
    assert pool()["disruption"]["consolidateAfter"] == "0s"


def test_min_values_with_exists_renders_without_values():
    spec = pool(requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5}])
    assert spec["template"]["spec"]["requirements"] == [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5}]


@pytest.mark.parametrize("requirement, message", [
    ({"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"], "minValues": 2},
     "minValues 2 needs at least that many values with operator In"),
    ({"key": "karpenter.k8s.aws/instance-family", "operator": "DoesNotExist", "minValues": 1},
     "minValues cannot be met with operator DoesNotExist"),
    ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4", "8"]},
     "operator Gte takes exactly one non-negative integer value"),
])
def test_requirement_rules_of_the_crd_and_runtime_validation(tmp_path, requirement, message):
    found = errors(tmp_path, {"requirements": [requirement]})
    assert len(found) == 1 and found[0].startswith("stacks/teams/web.yaml: nodePools[0].requirements[0]: ")
    assert message in found[0]


def test_static_pool_renders_replicas_and_node_limit():
    gate = {"karpenter": {"featureGates": {"staticCapacity": True}}}
    spec = pool(settings=gate, replicas=3, limits={"nodes": "5"})
    assert (spec["replicas"], spec["limits"]) == (3, {"nodes": "5"})
    assert "limits" not in pool(settings=gate, replicas=2, limits=None)


@pytest.mark.parametrize("changes, expected", [
    ({"replicas": 2}, "nodePools[0].limits: a static NodePool (replicas set) may only limit nodes, not cpu, memory"),
    ({"replicas": 2, "limits": {"nodes": "2"}, "weight": 5},
     "nodePools[0]: weight is not supported on static NodePools (replicas set)"),
    ({"limits": None}, "nodePools[0].limits: required key missing: a NodePool needs limits"),
])
def test_static_and_dynamic_pool_limits_follow_the_crd(tmp_path, changes, expected):
    found = errors(tmp_path, changes)
    assert any(line.startswith(f"stacks/teams/web.yaml: {expected}") for line in found), found


def test_taint_time_added_must_be_rfc3339(tmp_path):
    found = errors(tmp_path, {"taints": [{"key": "a", "effect": "NoExecute", "timeAdded": "yesterday"}]})
    assert found == ["stacks/teams/web.yaml: nodePools[0].taints[0].timeAdded: 'yesterday' is not an RFC 3339 date-time "
                     "(e.g. 2025-01-01T00:00:00Z)"]


# --- EC2NodeClass -----------------------------------------------------------------------------

@pytest.mark.parametrize("alias, devices", [
    ("al2023@v20251117", [("/dev/xvda", True, "50Gi")]),
    ("al2@v20240807", [("/dev/xvda", True, "50Gi")]),
    ("windows2022@latest", [("/dev/sda1", True, "50Gi")]),
    ("bottlerocket@v1.30.0", [("/dev/xvda", None, "4Gi"), ("/dev/xvdb", True, "50Gi")]),
])
def test_root_and_data_devices_follow_the_ami_family(alias, devices):
    spec = node_class({"amiAlias": alias, "allowLatestAmi": alias.endswith("@latest")})
    rendered = [(m["deviceName"], m.get("rootVolume"), m["ebs"]["volumeSize"]) for m in spec["blockDeviceMappings"]]
    assert rendered == devices
    assert all(m["ebs"]["encrypted"] is True for m in spec["blockDeviceMappings"])


def test_custom_family_without_a_device_name_keeps_the_amis_own_devices():
    spec = node_class({"amiFamily": "Custom", "amiSelectorTerms": [{"id": "ami-0abc"}], "userData": "#!/bin/bash\n"})
    assert "blockDeviceMappings" not in spec
    assert (spec["amiFamily"], spec["amiSelectorTerms"], spec["userData"]) == ("Custom", [{"id": "ami-0abc"}], "#!/bin/bash\n")


def test_instance_profile_replaces_the_role_and_overrides_replace_managed_selectors():
    spec = node_class({"instanceProfile": "nodes", "subnetSelectorTerms": [{"id": "subnet-0abc"}],
                       "securityGroupSelectorTerms": [{"name": "nodes"}]})
    assert "role" not in spec and spec["instanceProfile"] == "nodes"
    assert (spec["subnetSelectorTerms"], spec["securityGroupSelectorTerms"]) == ([{"id": "subnet-0abc"}], [{"name": "nodes"}])


def test_ec2nodeclass_keys_render_with_the_crd_spelling():
    spec = node_class({"associatePublicIPAddress": True, "instanceStorePolicy": "RAID0", "ipPrefixCount": 1,
                       "kubelet": {"clusterDNS": ["10.0.0.10"], "imageGCHighThresholdPercent": 90,
                                   "imageGCLowThresholdPercent": 80, "cpuCFSQuota": False},
                       "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi",
                                                                                    "kmsKeyID": "arn:k"}}]})
    assert spec["associatePublicIPAddress"] is True and spec["instanceStorePolicy"] == "RAID0"
    assert spec["kubelet"] == {"clusterDNS": ["10.0.0.10"], "imageGCHighThresholdPercent": 90,
                               "imageGCLowThresholdPercent": 80, "cpuCFSQuota": False}
    assert spec["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "kmsKeyID": "arn:k"}}]


@pytest.mark.parametrize("settings, message", [
    ({"role": "a", "instanceProfile": "b"}, "must specify exactly one of ['role', 'instanceProfile']"),
    ({"amiAlias": "al2023@v1", "amiSelectorTerms": [{"id": "ami-1"}]}, "set amiAlias or amiSelectorTerms, not both"),
    ({"amiSelectorTerms": [{"id": "ami-1"}]}, "amiFamily is required when amiSelectorTerms has no alias"),
    ({"amiSelectorTerms": [{"alias": "al2023@v1"}, {"id": "ami-1"}]}, "'alias' is mutually exclusive"),
    ({"amiSelectorTerms": [{"id": "ami-1", "name": "x"}], "amiFamily": "AL2023"}, "'id' is mutually exclusive"),
    ({"amiAlias": "bottlerocket@v1.30.0", "amiFamily": "AL2023"}, "amiFamily must be 'Bottlerocket' or 'Custom'"),
    ({"rootVolume": {"size": "20Gi"}, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}]},
     "set rootVolume or blockDeviceMappings, not both"),
    ({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeInitializationRate": 100, "volumeSize": "1Gi"}}]},
     "snapshotID must be set when volumeInitializationRate is set"),
    ({"kubelet": {"evictionSoft": {"memory.available": "5%"}}}, "has no matching evictionSoftGracePeriod"),
    ({"networkInterfaces": [{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}]},
     "networkInterfaces must include a primary interface"),
    ({"placementGroupSelector": {"name": "a", "id": "pg-1"}}, "set exactly one of name or id"),
    ({"capacityReservationSelectorTerms": [{"id": "cr-1", "ownerID": "123456789012"}]}, "'id' is mutually exclusive"),
    ({"connectionTracking": {}}, "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout"),
    ({"amiFamily": "Custom"}, "amiFamily Custom has no known root device"),
])
def test_ec2nodeclass_cel_rules_are_config_errors(tmp_path, settings, message):
    if settings == {"amiFamily": "Custom"}:
        settings = {"amiFamily": "Custom", "rootVolume": {"size": "20Gi"}}
    found = errors(tmp_path, node_class=settings)
    assert any(line.startswith("stacks/Pulumi.test.yaml: karpenter-platform:nodeClasses.default") and message in line
               for line in found), found


# --- NodeOverlay ------------------------------------------------------------------------------

OVERLAY = {"name": "cheap-spot", "priceAdjustment": "-10%", "weight": 10,
           "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
           "capacity": {"smarter-devices/fuse": "1"}}


def test_team_overlay_is_limited_to_the_teams_pools_and_turns_the_gate_on():
    platform = platform_from(teams={"web": {"name": "web", "nodePools": [MINIMAL_POOL], "nodeOverlays": [OVERLAY]}})
    [manifest] = nodeoverlay_manifests(platform)
    assert manifest["apiVersion"] == "karpenter.sh/v1alpha1" and manifest["metadata"]["name"] == "web-cheap-spot"
    assert manifest["spec"] == {
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                         {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["web-pool"]}],
        "priceAdjustment": "-10%", "weight": 10, "capacity": {"smarter-devices/fuse": "1"}}
    assert feature_gates(platform)["nodeOverlay"] is True


@pytest.mark.parametrize("overlay, message", [
    ({"price": "0.5", "priceAdjustment": "+1"}, "cannot set both 'price' and 'priceAdjustment'"),
    ({"capacity": {"cpu": "1"}}, "cpu: invalid resource restricted"),
    ({"priceAdjustment": "-101%"}, "is not a price adjustment"),
    ({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["batch-jobs"]}]},
     "karpenter.sh/nodepool may only name this team's NodePools (web-pool), not batch-jobs"),
    ({"requirements": [{"key": "karpenter.k8s.aws/instance-tenancy", "operator": "Exists"}]},
     "not an instance-type label"),
])
def test_overlay_rules_of_the_crd_are_config_errors(tmp_path, overlay, message):
    found = errors(tmp_path, team_extra={"nodeOverlays": [{"name": "o", **overlay}]})
    assert any(line.startswith("stacks/teams/web.yaml: ") and message in line for line in found), found


def test_overlay_component_declares_each_overlay_after_the_controller():
    import pulumi

    from components.nodeoverlays import NodeOverlays

    platform = platform_from(teams={"web": {"name": "web", "nodePools": [MINIMAL_POOL], "nodeOverlays": [OVERLAY]}})

    def program():
        guard = pulumi.CustomResource("test:index:Guard", "controller")
        NodeOverlays("node-overlays", platform, depends_on=[guard])

    capture = run_component(program)
    (overlay,) = capture.of_type("kubernetes:karpenter.sh/v1alpha1:NodeOverlay")
    assert overlay.inputs["metadata"]["name"] == "web-cheap-spot"
    assert overlay.options["dependsOn"] == [capture.named("controller").urn]


# --- config and the CRD agree (property) ------------------------------------------------------

_VALUES = st.lists(st.sampled_from(["4", "0", "-1", "m5", "c7i", "", "a" * 64]), max_size=3)


@settings(max_examples=60, deadline=None)
@given(operator=st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]),
       values=_VALUES, min_values=st.one_of(st.none(), st.integers(min_value=0, max_value=3)))
@pytest.mark.slow
def test_a_requirement_config_accepts_is_one_the_nodepool_crd_accepts(crd_validator, operator, values, min_values):
    """Whatever requirement the team config accepts renders a NodePool the CRD (schema + CEL) accepts;
    and whatever the CRD refuses, config refuses. Config is stricter only where Kubernetes and
    Karpenter's runtime are: values with Exists/DoesNotExist, minValues that can never be met."""
    requirement = {"key": "karpenter.k8s.aws/instance-cpu", "operator": operator, "values": values}
    if min_values is not None:
        requirement["minValues"] = min_values
    try:
        spec_pool = Team.model_validate({"name": "web", "nodePools": [{**MINIMAL_POOL, "requirements": [requirement]}]})
    except ValidationError:
        accepted = False
    else:
        accepted = True
    manifest = nodepool_manifest_for(requirement)
    crd_ok = not crd_validator.validate(manifest)
    if accepted:
        assert crd_ok, crd_validator.validate(manifest)
        assert nodepool_manifest(spec_pool, spec_pool.node_pools[0])["spec"]["template"]["spec"]["requirements"] == \
            [{k: v for k, v in requirement.items() if not (k == "values" and not v)}]
    elif crd_ok:
        stricter = ((operator in ("Exists", "DoesNotExist") and values) or (operator == "DoesNotExist" and min_values)
                    or not all(_label_value(v) for v in values))
        assert stricter, f"config refuses a requirement the CRD accepts: {requirement}"


def _label_value(value):
    try:
        check_label_value(value)
    except ValueError:
        return False
    return True


def nodepool_manifest_for(requirement):
    """A NodePool carrying `requirement` as written (not through config)."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "web-pool"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"},
                                           "requirements": [requirement]}}}}


@pytest.fixture(scope="module")
def crd_validator():
    from components.crds import CrdValidator

    return CrdValidator(shared("reference/karpenter/crds"))
