"""EC2NodeClasses: node role, pinned AMI (floating ones flagged), selectors, IMDSv2, root volume, tags."""

import pytest

from components.config import ConfigError
from components.nodeclasses import FLOATING_AMI_ANNOTATION, NodeClasses, nodeclass_manifest
from offline.placeholders import TAGGED_SUBNETS
from tests.harness import manifests, platform_from, render, run_component


def node_class(settings=None, name="default", **kwargs):
    platform = platform_from(settings={"nodeClasses": {name: settings or {}}})
    return nodeclass_manifest(name, platform.settings.node_classes[name], cluster_name="acme", role="KarpenterNodeRole-acme", **kwargs)


def test_default_node_class_is_pinned_imdsv2_and_encrypted_gp3():
    manifest = node_class({"tags": {"cost-center": "platform"}})
    assert manifest == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", "labels": {"app.kubernetes.io/managed-by": "karpenter-platform"}},
        "spec": {
            "role": "KarpenterNodeRole-acme",
            "amiSelectorTerms": [{"alias": "al2023@v20251117"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "acme"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "acme"}}],
            "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                "httpPutResponseHopLimit": 1, "httpTokens": "required"},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
                "volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}],
            "tags": {"cost-center": "platform", "karpenter-platform.io/node-class": "default"},
            "detailedMonitoring": False,
        },
    }


def test_selector_tags_from_the_aws_side_are_used():
    manifest = node_class(subnet_tags={"kubernetes.io/role/internal-elb": "1"},
                          security_group_tags={"karpenter.sh/discovery": "acme"})
    assert manifest["spec"]["subnetSelectorTerms"] == [{"tags": {"kubernetes.io/role/internal-elb": "1"}}]
    assert manifest["spec"]["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "acme"}}]


def test_volume_options_and_kubelet_reach_the_node_class():
    manifest = node_class({"rootVolume": {"size": "200Gi", "iops": 6000, "throughput": 250, "kmsKeyId": "arn:aws:kms:x"},
                           "kubelet": {"maxPods": 58, "systemReserved": {"cpu": "100m"}}})
    assert manifest["spec"]["blockDeviceMappings"][0]["ebs"] == {
        "volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True,
        "kmsKeyID": "arn:aws:kms:x", "iops": 6000, "throughput": 250}
    assert manifest["spec"]["kubelet"] == {"maxPods": 58, "systemReserved": {"cpu": "100m"}}


def test_latest_ami_is_flagged_on_the_object():
    manifest = node_class({"amiAlias": "al2023@latest", "allowLatestAmi": True})
    assert manifest["metadata"]["annotations"] == {
        FLOATING_AMI_ANNOTATION: "al2023@latest: nodes change AMI without a config change"}


def test_pinned_ami_carries_no_flag():
    assert "annotations" not in node_class()["metadata"]


def test_latest_ami_warns_at_deploy_time(monkeypatch):
    warnings = []
    monkeypatch.setattr("components.nodeclasses.pulumi.log.warn", lambda message, resource=None: warnings.append(message))
    platform = platform_from(settings={"nodeClasses": {"default": {"amiAlias": "al2023@latest", "allowLatestAmi": True},
                                                        "pinned": {}}})
    run_component(lambda: NodeClasses("node-classes", platform, cluster_name="acme", node_role_name="role"))
    assert warnings == ["EC2NodeClass default: amiAlias al2023@latest floats; nodes are replaced (drift) whenever a new AMI is released"]


def test_latest_ami_without_opt_in_is_refused():
    with pytest.raises(ConfigError, match="floats to new AMIs"):
        node_class({"amiAlias": "al2023@latest"})


@pytest.mark.parametrize("settings, message", [
    ({"tags": {"kubernetes.io/cluster/acme": "owned"}}, "tag 'kubernetes.io/cluster/acme' is reserved"),
    ({"tags": {"karpenter.sh/nodepool": "x"}}, "tag 'karpenter.sh/nodepool' is reserved"),
    ({"rootVolume": {"size": "51200Mi"}}, "is not an EBS volume size the EC2NodeClass accepts"),
    ({"rootVolume": {"size": "60000Gi"}}, "is not an EBS volume size the EC2NodeClass accepts"),
    ({"amiAlias": "windows2022@v1"}, "Windows AMI families only accept the version 'latest'"),
    ({"kubelet": {"kubeReserved": {"gpu": "1"}}}, "gpu: valid keys are cpu, memory, ephemeral-storage, pid"),
    ({"kubelet": {"evictionHard": {"memory.free": "5%"}}}, "memory.free: valid signals are"),
    ({"metadataOptions": {"httpProtocolIpv6": "enabled"}}, "unknown key 'httpProtocolIpv6'"),
])
def test_config_refuses_what_the_ec2nodeclass_would_refuse(settings, message):
    with pytest.raises(ConfigError) as err:
        node_class(settings)
    assert message in str(err.value)


def test_ipv6_metadata_option_uses_the_crd_spelling():
    manifest = node_class({"metadataOptions": {"httpProtocolIPv6": "enabled"}})
    assert manifest["spec"]["metadataOptions"]["httpProtocolIPv6"] == "enabled"


def test_stack_node_classes_use_the_node_role_of_the_aws_side():
    capture = render("prod")
    for manifest in manifests(capture, "EC2NodeClass"):
        assert manifest["spec"]["role"] == capture.outputs["nodeRoleName"]
        assert manifest["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251117"}]


def test_staging_selects_the_subnets_its_tags_found_in_the_cluster_vpc_by_id():
    for manifest in manifests(render("staging"), "EC2NodeClass"):
        assert manifest["spec"]["subnetSelectorTerms"] == [{"id": s} for s in sorted(TAGGED_SUBNETS)]
        assert manifest["spec"]["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "acme-staging"}}]


def test_stack_node_classes_wait_for_the_controller_and_outlive_nodepools():
    capture = render("dev")
    controller = capture.named("karpenter-controller").urn
    for resource in capture.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"):
        assert controller in resource.options["dependsOn"]
        assert resource.options["customTimeouts"] == {"delete": "30m"}
    node_class_urns = {r.urn for r in capture.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")}
    for pool in capture.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        assert node_class_urns <= set(pool.options["dependsOn"])


def test_outputs_stay_at_the_leaves_so_previews_see_the_rest():
    import pulumi

    role = pulumi.Output.from_input("KarpenterNodeRole-acme")
    manifest = nodeclass_manifest("default", platform_from().settings.node_classes["default"], cluster_name="acme", role=role)
    assert manifest["spec"]["role"] is role
    assert manifest["spec"]["metadataOptions"]["httpTokens"] == "required"
    assert manifest["metadata"]["name"] == "default"


@pytest.mark.parametrize("family,alias", [("AL2", "al2"), ("Bottlerocket", "bottlerocket"), ("Windows2022", "windows2022")])
def test_ami_family_without_a_selector_is_told_the_matching_alias(family, alias):
    """karpenter.k8s.aws/v1 requires amiSelectorTerms (the v1 migration guide: amiFamily alone no
    longer picks AMIs); the message named the platform's default alias al2023@v20251117 instead."""
    with pytest.raises(ConfigError) as caught:
        platform_from(settings={"nodeClasses": {"default": {"amiFamily": family}}})
    [issue] = caught.value.issues
    assert issue.path == "karpenter-platform:nodeClasses.default"
    assert issue.message.startswith(f"amiSelectorTerms (or amiAlias) is required with amiFamily {family} in karpenter.k8s.aws/v1; "
                                    f"for amiFamily {family} the matching alias is {alias}@<version>")
    assert "al2023@v20251117" not in issue.message

