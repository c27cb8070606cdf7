"""What a real account needs beyond the documents: lookups in the cluster's region, subnets from
the cluster's VPC only, one access entry per principal (EC2_WINDOWS for Windows node classes),
and the Odigos release after the NodePools' startup taint."""

import pulumi
import pytest

from components import arns
from components.aws import KarpenterAws, ami_family, node_access_entry_type
from components.cluster import ExistingCluster, same_partition, subnet_filters
from components.config.cluster import SubnetSelection
from components.provisioner import Provisioner
from offline.monitor import run
from offline.placeholders import ACCOUNT_ID, VPC_ID, PlaceholderMocks
from policies.check import resource_from_render
from policies.engine import evaluate
from policies.model import Stack
from tests.harness import MINIMAL_SETTINGS, PROJECT_DIR, manifests, platform_from, render, stack_platform

WINDOWS = {"amiAlias": "windows2022@latest", "allowLatestAmi": True}


def declare(settings: dict, provider_region: str = "eu-west-1", with_provisioner: bool = False):
    """KarpenterAws (and optionally the provisioner) with the provider's default region elsewhere
    than the cluster's: the mocks answer in `provider_region` unless a call names a region."""
    config = platform_from(settings=settings)
    mocks = PlaceholderMocks(provider_region)

    def program():
        cluster = ExistingCluster("cluster", config.settings.cluster)
        KarpenterAws("karpenter-aws", config, cluster)
        if with_provisioner:
            Provisioner("provisioner", config, cluster)

    return run(program, mocks, config={"aws:region": provider_region}), mocks


TAGGED = {"cluster": {**MINIMAL_SETTINGS["cluster"], "region": "us-east-2",
                      "subnets": {"tags": {"kubernetes.io/role/internal-elb": "1"}}}}


@pytest.fixture(scope="module")
def tagged():
    return declare({**TAGGED, "provisioner": {"enabled": True}}, with_provisioner=True)


def test_regional_lookups_name_the_clusters_region_not_the_providers(tagged):
    _, mocks = tagged
    regional = {token.rsplit(":", 1)[1]: args.get("region") for token, args in mocks.call_args
                if token.rsplit(":", 1)[1] in ("getCluster", "getSubnets", "getAuthorizationToken")}
    assert regional == {"getCluster": "us-east-2", "getSubnets": "us-east-2", "getAuthorizationToken": "us-east-2"}


def test_resources_and_arns_follow_the_clusters_region(tagged):
    capture, _ = tagged
    assert capture.named("karpenter-aws-interruption-queue").inputs["region"] == "us-east-2"
    assert capture.named("provisioner-repository").inputs["region"] == "us-east-2"
    for target in capture.of_type("aws:cloudwatch/eventTarget:EventTarget"):
        assert target.inputs["arn"] == f"arn:aws:sqs:us-east-2:{ACCOUNT_ID}:test-cluster"


def test_subnets_selected_by_tags_are_looked_up_in_the_clusters_vpc_only(tagged):
    """karpenter-provider-aws v1.14.1 pkg/providers/subnet/subnet.go (getFilterSets): Karpenter's
    DescribeSubnets filters are the selector's tags alone, so the VPC filter is ours to add."""
    _, mocks = tagged
    [filters] = [args["filters"] for token, args in mocks.call_args if token.endswith("getSubnets")]
    assert filters == [{"name": "vpc-id", "values": [VPC_ID]},
                       {"name": "tag:kubernetes.io/role/internal-elb", "values": ["1"]}]


def test_subnet_filters_put_the_vpc_first_and_every_tag_after_it():
    selection = SubnetSelection(tags={"b": "2", "a": "1"})
    assert subnet_filters(selection, "vpc-1") == [{"name": "vpc-id", "values": ["vpc-1"]},
                                                  {"name": "tag:a", "values": ["1"]},
                                                  {"name": "tag:b", "values": ["2"]}]


def test_partition_must_be_the_clusters():
    assert same_partition("aws-cn", "arn:aws-cn:eks:cn-north-1:123456789012:cluster/c", "cn-north-1") == "aws-cn"
    with pytest.raises(pulumi.RunError, match="partition 'aws' but the cluster .* is in 'aws-cn'"):
        same_partition("aws", "arn:aws-cn:eks:cn-north-1:123456789012:cluster/c", "cn-north-1")


def test_arns_are_built_the_way_aws_names_the_resources():
    assert arns.iam_role_arn("aws-us-gov", "123456789012", "KarpenterNodeRole-c") == \
        "arn:aws-us-gov:iam::123456789012:role/KarpenterNodeRole-c"
    assert arns.sqs_queue_arn("aws", "eu-west-1", "123456789012", "c") == "arn:aws:sqs:eu-west-1:123456789012:c"
    assert arns.partition_of("arn:aws-iso-b:eks:us-isob-east-1:1:cluster/c") == "aws-iso-b"
    with pytest.raises(ValueError):
        arns.partition_of("not-an-arn")


# --- access entry per AMI family -----------------------------------------------------------------

@pytest.mark.parametrize(("families", "expected"), [
    (["al2023"], "EC2_LINUX"),
    (["al2023", "bottlerocket"], "EC2_LINUX"),
    (["al2023", "windows2022"], "EC2_WINDOWS"),
    (["windows2019"], "EC2_WINDOWS"),
    (["windows2025", "bottlerocket"], "EC2_WINDOWS"),
    ([], "EC2_LINUX"),
])
def test_access_entry_type_is_windows_as_soon_as_one_node_class_is(families, expected):
    classes = [type("NC", (), {"ami_alias": f"{f}@latest"})() for f in families]
    assert node_access_entry_type(classes) == expected


def test_ami_family_prefers_an_explicit_family_to_the_alias():
    assert ami_family(type("NC", (), {"ami_family": "Windows2022", "ami_alias": None})()) == "windows2022"
    assert ami_family(type("NC", (), {"ami_alias": "bottlerocket@v1.30.0"})()) == "bottlerocket"


def test_windows_node_class_gets_one_ec2_windows_access_entry_for_the_shared_node_role():
    """EKS takes a principal in one access entry only (CreateAccessEntry: "You can't specify the
    same ARN in more than one access entry"), so the role shared by Linux and Windows classes gets
    EC2_WINDOWS, whose groups (system:nodes + eks:kube-proxy-windows) are what Karpenter's
    troubleshooting guide (v1.14.1) maps for a node role used by Windows nodes."""
    capture, _ = declare({"nodeClasses": {"default": {"amiAlias": "al2023@v20251117"}, "windows": WINDOWS}})
    [entry] = capture.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2_WINDOWS"
    assert entry.inputs["principalArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/KarpenterNodeRole-test-cluster"
    # The type is immutable: a change replaces the entry, and the old one must go first.
    assert entry.options["deleteBeforeReplace"] is True


def test_linux_only_node_classes_keep_the_ec2_linux_entry():
    capture, _ = declare({"nodeClasses": {"default": {"amiAlias": "al2023@v20251117"}}})
    assert [e.inputs["type"] for e in capture.of_type("aws:eks/accessEntry:AccessEntry")] == ["EC2_LINUX"]


def test_policy_pack_accepts_node_classes_whose_role_has_the_ec2_windows_entry():
    capture, _ = declare({"nodeClasses": {"default": {"amiAlias": "al2023@v20251117"}, "windows": WINDOWS}})
    role = capture.named("karpenter-aws-node", "aws:iam/role:Role").inputs["name"]
    node_class = {"type": "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "name": "ec2nodeclass-windows",
                  "inputs": {"metadata": {"name": "windows"}, "spec": {"role": role}}}
    stack = Stack("prod", tuple(resource_from_render(r.to_json()) for r in capture.resources)
                  + (resource_from_render(node_class),))
    assert [f for f in evaluate(stack) if f.policy == "nodeclass-role-has-access-entry"] == []


# --- Odigos after the NodePools' startup taint ---------------------------------------------------

def test_odigos_release_waits_for_every_nodepool_when_the_mount_method_taints_them():
    """Odigos' guide (docs/setup/odigos-with-karpenter.mdx): the NodePools get the startup taint
    (step 1) before `karpenter.enabled=true` turns the integration on (step 3)."""
    capture = render("dev")  # k8s-host-path
    release = capture.named("odigos", "kubernetes:helm.sh/v3:Release")
    pools = capture.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert pools and all(p.inputs["spec"]["template"]["spec"]["startupTaints"] for p in pools)
    assert {p.urn for p in pools} <= set(release.options["dependsOn"])


def test_odigos_release_does_not_wait_for_nodepools_without_a_startup_taint():
    capture = render("staging")  # k8s-virtual-device
    release = capture.named("odigos", "kubernetes:helm.sh/v3:Release")
    pools = {p.urn for p in capture.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    assert not pools & set(release.options["dependsOn"])


def test_staging_selects_subnets_by_a_cluster_tag_not_a_generic_one_alone():
    """A generic role tag alone would match subnets meant for other clusters of the VPC."""
    staging = stack_platform("staging").settings.cluster
    assert staging.subnets.tags.get(f"kubernetes.io/cluster/{staging.name}") in ("shared", "owned")
    assert manifests(render("staging"), "EC2NodeClass")[0]["spec"]["subnetSelectorTerms"][0].keys() == {"id"}


def test_render_refuses_a_tag_selection_that_finds_no_subnet_in_the_vpc(tmp_path, monkeypatch, capsys):
    from offline import placeholders
    from offline.render import main

    monkeypatch.setattr(placeholders, "TAGGED_SUBNETS", [])
    out = tmp_path / "staging"
    assert main(["staging", "--out", str(out), "--project-dir", str(PROJECT_DIR)]) == 2
    err = capsys.readouterr().err
    assert ("error: karpenter-platform:cluster.subnets.tags: no subnet of the cluster's VPC has the tags "
            "kubernetes.io/cluster/acme-staging=shared, kubernetes.io/role/internal-elb=1") in err
    assert "Traceback" not in err
    assert not out.exists()
