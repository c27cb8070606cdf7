"""The EC2NodeClass and NodePool builders as pure functions: every branch of `nodeclass_manifest`,
`block_device_mappings`, `startup_taints` and `nodepool_manifest` with the exact values produced.
No Pulumi mock runs here, so `make mutation` judges each builder mutant in seconds.

Device defaults follow aws/karpenter-provider-aws pkg/providers/amifamily (v1.14.1):
bottlerocket.go DefaultBlockDeviceMappings (4Gi `/dev/xvda` OS volume + `/dev/xvdb` data volume),
windows.go (`/dev/sda1`), al2023.go (`/dev/xvda`), custom.go (none: the AMI's own mappings)."""

import pulumi

from components.config.nodeclasses import NodeClass
from components.config.nodepools import NodePool
from components.nodeclasses import block_device_mappings, floats, nodeclass_manifest
from components.nodepools import nodepool_manifest, nodepool_manifests, nodepool_name, startup_taints
from tests.harness import MINIMAL_POOL, platform_from

AMI_ID = "ami-0123456789abcdef0"
NEEDS_INIT = {"key": "odigos.io/needs-init", "effect": "NoSchedule"}


def node_class(**settings) -> NodeClass:
    return NodeClass.model_validate(settings)


def manifest(nc: NodeClass, name="gpu", **kwargs):
    return nodeclass_manifest(name, nc, cluster_name="acme", role="NodeRole", **kwargs)


# --- block_device_mappings -------------------------------------------------------------------

def test_al2023_root_volume_is_one_encrypted_gp3_device_on_xvda():
    assert block_device_mappings(node_class()) == [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
        "volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}]


def test_windows_root_volume_is_on_sda1():
    nc = node_class(amiAlias="windows2022@latest", allowLatestAmi=True, rootVolume={"size": "100Gi"})
    assert block_device_mappings(nc) == [{"deviceName": "/dev/sda1", "rootVolume": True, "ebs": {
        "volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}]


def test_bottlerocket_gets_a_4gi_gp3_os_volume_before_the_data_volume_without_iops_or_throughput():
    nc = node_class(amiAlias="bottlerocket@v1.20.0", rootVolume={
        "size": "80Gi", "iops": 4000, "throughput": 200, "kmsKeyId": "arn:aws:kms:k"})
    assert block_device_mappings(nc) == [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi", "volumeType": "gp3", "encrypted": True,
                                            "deleteOnTermination": True, "kmsKeyID": "arn:aws:kms:k"}},
        {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {
            "volumeSize": "80Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True,
            "kmsKeyID": "arn:aws:kms:k", "iops": 4000, "throughput": 200}}]


def test_bottlerocket_with_an_explicit_device_name_gets_only_that_device():
    nc = node_class(amiAlias="bottlerocket@v1.20.0", rootVolume={"deviceName": "/dev/xvdc", "type": "gp2"})
    assert block_device_mappings(nc) == [{"deviceName": "/dev/xvdc", "rootVolume": True, "ebs": {
        "volumeSize": "50Gi", "volumeType": "gp2", "encrypted": True, "deleteOnTermination": True}}]


def test_custom_family_without_device_name_keeps_the_amis_own_mappings():
    assert block_device_mappings(node_class(amiFamily="Custom", amiSelectorTerms=[{"id": AMI_ID}])) is None
    assert "blockDeviceMappings" not in manifest(node_class(amiFamily="Custom", amiSelectorTerms=[{"id": AMI_ID}]))["spec"]


def test_custom_family_with_device_name_gets_the_root_volume_there():
    nc = node_class(amiFamily="Custom", amiSelectorTerms=[{"id": AMI_ID}],
                    rootVolume={"deviceName": "/dev/nvme0n1", "encrypted": False})
    assert block_device_mappings(nc) == [{"deviceName": "/dev/nvme0n1", "rootVolume": True, "ebs": {
        "volumeSize": "50Gi", "volumeType": "gp3", "encrypted": False, "deleteOnTermination": True}}]


def test_written_block_device_mappings_replace_the_root_volume():
    mappings = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi", "volumeType": "gp3"}},
                {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi", "volumeType": "gp2"}}]
    nc = node_class(blockDeviceMappings=mappings, amiAlias="bottlerocket@v1.20.0")
    assert block_device_mappings(nc) == mappings  # as written: no Bottlerocket OS volume added, nothing unset added


# --- nodeclass_manifest ----------------------------------------------------------------------

def test_instance_profile_replaces_the_role_and_ami_family_is_written():
    nc = node_class(instanceProfile="KarpenterProfile", amiFamily="AL2023", amiSelectorTerms=[{"id": AMI_ID}])
    spec = manifest(nc)["spec"]
    assert spec["instanceProfile"] == "KarpenterProfile"
    assert "role" not in spec
    assert spec["amiFamily"] == "AL2023"
    assert spec["amiSelectorTerms"] == [{"id": AMI_ID}]


def test_a_node_class_role_wins_over_the_stack_role():
    spec = manifest(node_class(role="CustomRole"))["spec"]
    assert spec["role"] == "CustomRole"
    assert "instanceProfile" not in spec and "amiFamily" not in spec


def test_written_selector_terms_win_over_the_aws_sides():
    nc = node_class(subnetSelectorTerms=[{"id": "subnet-0123456789abcdef0"}],
                    securityGroupSelectorTerms=[{"name": "nodes"}])
    spec = manifest(nc, subnet_terms=[{"id": "subnet-ffffffffffffffff0"}], subnet_tags={"a": "b"},
                    security_group_tags={"c": "d"})["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0123456789abcdef0"}]
    assert spec["securityGroupSelectorTerms"] == [{"name": "nodes"}]


def test_aws_side_subnet_terms_win_over_subnet_tags():
    spec = manifest(node_class(), subnet_terms=[{"id": "subnet-ffffffffffffffff0"}], subnet_tags={"a": "b"})["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-ffffffffffffffff0"}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "acme"}}]


def test_selector_tags_default_to_the_discovery_tag_and_outputs_pass_through():
    tags = pulumi.Output.from_input({"x": "y"})
    spec = manifest(node_class(), subnet_tags=tags)["spec"]
    assert spec["subnetSelectorTerms"] == [{"tags": tags}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "acme"}}]


def test_optional_ec2nodeclass_keys_are_written_with_crd_spelling_only_when_set():
    nc = node_class(instanceStorePolicy="RAID0", userData="#!/bin/sh\n", associatePublicIPAddress=False,
                    ipPrefixCount=0, context="ctx", detailedMonitoring=True, kubelet={"maxPods": 20},
                    cpuOptions={"nestedVirtualization": "enabled"})
    spec = manifest(nc)["spec"]
    assert spec["instanceStorePolicy"] == "RAID0"
    assert spec["userData"] == "#!/bin/sh\n"
    assert spec["associatePublicIPAddress"] is False
    assert spec["ipPrefixCount"] == 0
    assert spec["context"] == "ctx"
    assert spec["detailedMonitoring"] is True
    assert spec["kubelet"] == {"maxPods": 20}
    assert spec["cpuOptions"] == {"nestedVirtualization": "enabled"}
    plain = manifest(node_class())["spec"]
    assert set(plain) == {"role", "amiSelectorTerms", "subnetSelectorTerms", "securityGroupSelectorTerms",
                          "metadataOptions", "blockDeviceMappings", "tags", "detailedMonitoring"}


def test_the_node_class_tag_names_the_class_and_overrides_a_written_one():
    assert manifest(node_class(tags={"team": "ml"}), name="gpu")["spec"]["tags"] == {
        "team": "ml", "karpenter-platform.io/node-class": "gpu"}


def test_metadata_names_the_class_and_marks_it_managed():
    meta = manifest(node_class(), name="gpu")["metadata"]
    assert meta == {"name": "gpu", "labels": {"app.kubernetes.io/managed-by": "karpenter-platform"}}


def test_floating_alias_is_detected_only_for_latest():
    assert floats(node_class(amiAlias="al2023@latest", allowLatestAmi=True)) is True
    assert floats(node_class(amiAlias="al2023@v20251117")) is False
    assert floats(node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": AMI_ID}])) is False


# --- NodePools -------------------------------------------------------------------------------

def pool_of(pool, settings=None, environment_budget=None, **team_extra):
    teams = {"web": {"name": "web", "nodePools": [pool], **team_extra}}
    platform = platform_from(settings=settings, teams=teams, other_stacks=("dev", "prod"))
    return platform, platform.teams[0], platform.teams[0].node_pools[0]


def test_nodepool_name_is_team_dash_pool():
    _, team, pool = pool_of({**MINIMAL_POOL, "name": "batch"})
    assert nodepool_name(team, pool) == "web-batch"
    assert nodepool_manifest(team, pool)["metadata"]["name"] == "web-batch"


def test_exists_requirement_is_written_without_values():
    _, team, pool = pool_of({**MINIMAL_POOL, "requirements": [
        {"key": "example.com/gpu", "operator": "Exists"},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]})
    assert nodepool_manifest(team, pool)["spec"]["template"]["spec"]["requirements"] == [
        {"key": "example.com/gpu", "operator": "Exists"},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def test_minimal_pool_has_exactly_the_required_keys():
    _, team, pool = pool_of(dict(MINIMAL_POOL))
    m = nodepool_manifest(team, pool)
    assert m["apiVersion"] == "karpenter.sh/v1" and m["kind"] == "NodePool"
    assert m["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "karpenter-platform", "karpenter-platform.io/team": "web"}
    assert m["metadata"]["annotations"] == {"pulumi.com/deletionPropagationPolicy": "foreground",
                                            "karpenter-platform.io/allow-spot": "true"}
    assert set(m["spec"]) == {"template", "disruption", "limits"}
    assert m["spec"]["limits"] == {"cpu": "10", "memory": "40Gi"}
    assert set(m["spec"]["template"]["spec"]) == {"nodeClassRef", "requirements", "expireAfter"}
    assert m["spec"]["template"]["metadata"] == {"labels": {"karpenter-platform.io/team": "web"}}


def test_static_pool_writes_replicas_and_node_limit():
    _, team, pool = pool_of({"name": "fixed", "replicas": 3, "limits": {"nodes": "5"}},
                            settings={"karpenter": {"featureGates": {"staticCapacity": True}}})
    spec = nodepool_manifest(team, pool)["spec"]
    assert spec["replicas"] == 3
    assert spec["limits"] == {"nodes": "5"}
    assert "weight" not in spec


def test_budget_annotation_is_the_environments_budget_only():
    _, team, pool = pool_of(dict(MINIMAL_POOL), budget={"dev": 20.5, "prod": 400})
    assert nodepool_manifest(team, pool, environment="dev")["metadata"]["annotations"][
        "karpenter-platform.io/budget-usd-hour"] == "20.5"
    assert nodepool_manifest(team, pool, environment="prod")["metadata"]["annotations"][
        "karpenter-platform.io/budget-usd-hour"] == "400"
    assert "karpenter-platform.io/budget-usd-hour" not in nodepool_manifest(team, pool, environment="staging")["metadata"]["annotations"]
    assert "karpenter-platform.io/budget-usd-hour" not in nodepool_manifest(team, pool)["metadata"]["annotations"]


def test_startup_taints_add_needs_init_unless_declared_as_a_noschedule_taint():
    _, _, tainted = pool_of({**MINIMAL_POOL, "taints": [{"key": "odigos.io/needs-init", "effect": "NoSchedule"}]},
                            settings={"odigos": {"enabled": True, "mountMethod": "k8s-virtual-device"}})
    assert startup_taints(tainted, odigos_taint=True) == []
    _, _, other_effect = pool_of({**MINIMAL_POOL, "taints": [{"key": "odigos.io/needs-init", "effect": "NoExecute"}]},
                                 settings={"odigos": {"enabled": True, "mountMethod": "k8s-virtual-device"}})
    assert startup_taints(other_effect, odigos_taint=True) == [NEEDS_INIT]
    assert startup_taints(other_effect, odigos_taint=False) == []


def test_nodepool_manifests_cover_every_team_pool_with_the_stack_environment_and_odigos_taint():
    teams = {"web": {"nodePools": [dict(MINIMAL_POOL), {**MINIMAL_POOL, "name": "batch"}], "budget": {"test": 3}},
             "ml": {"nodePools": [{**MINIMAL_POOL, "name": "gpu"}]}}
    platform = platform_from(settings={"odigos": {"enabled": True, "mountMethod": "k8s-host-path"}}, teams=teams)
    built = nodepool_manifests(platform)
    assert [m["metadata"]["name"] for m in built] == ["ml-gpu", "web-pool", "web-batch"]
    assert all(m["spec"]["template"]["spec"]["startupTaints"] == [NEEDS_INIT] for m in built) and len(built) == 3
    assert [m["metadata"]["annotations"].get("karpenter-platform.io/budget-usd-hour") for m in built] == [None, "3", "3"]


def test_list_valued_optional_keys_are_written_item_by_item_in_crd_spelling():
    nc = node_class(capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}, {"tags": {"team": "ml"}, "ownerID": "123456789012"}])
    assert manifest(nc)["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"}, {"tags": {"team": "ml"}, "ownerID": "123456789012"}]


def test_security_group_tags_of_the_aws_side_replace_the_discovery_tag():
    spec = manifest(node_class(), security_group_tags={"example.com/nodes": "acme"})["spec"]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"example.com/nodes": "acme"}}]


def test_selector_tags_are_copied_so_later_changes_to_the_callers_mapping_do_not_leak_in():
    subnet_tags = {"example.com/subnets": "private"}
    spec = manifest(node_class(), subnet_tags=subnet_tags)["spec"]
    subnet_tags["example.com/subnets"] = "public"
    assert spec["subnetSelectorTerms"] == [{"tags": {"example.com/subnets": "private"}}]


def test_taint_time_added_is_written_in_crd_spelling_on_taints_and_startup_taints():
    taint = {"key": "example.com/maint", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}
    _, team, pool = pool_of({**MINIMAL_POOL, "taints": [taint], "startupTaints": [{**taint, "key": "example.com/boot"}]})
    spec = nodepool_manifest(team, pool)["spec"]["template"]["spec"]
    assert spec["taints"] == [taint]
    assert spec["startupTaints"] == [{**taint, "key": "example.com/boot"}]


def test_default_disruption_is_written_without_unset_keys():
    _, team, pool = pool_of(dict(MINIMAL_POOL))
    assert nodepool_manifest(team, pool)["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]}


def test_largest_pod_annotation_has_sorted_keys_whatever_order_the_team_wrote():
    # A stable string: a reordering alone must not show as a change of the NodePool on `pulumi up`.
    _, team, _ = pool_of(dict(MINIMAL_POOL))
    pool = NodePool.model_validate({**MINIMAL_POOL, "largestPod": {"memory": "16Gi", "cpu": "4"}})
    assert nodepool_manifest(team, pool)["metadata"]["annotations"]["karpenter-platform.io/largest-pod"] == \
        '{"cpu": "4", "memory": "16Gi"}'
