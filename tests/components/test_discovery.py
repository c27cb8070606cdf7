"""Discovery tags: configured subnets and exactly one security group, never owned; the subnet
selector the EC2NodeClasses get."""

import pulumi
import pytest

from components.cluster import ExistingCluster
from components.config.cluster import SubnetSelection
from components.discovery import (DISCOVERY_TAG, MAX_SELECTOR_TERMS, DiscoveryTags, subnet_selector_terms,
                                  tagged_subnet_ids)
from offline.placeholders import CLUSTER_SECURITY_GROUP_ID, TAGGED_SUBNETS
from tests.harness import MINIMAL_SETTINGS, STACKS, platform_from, render, run_component, stack_platform

SUBNETS = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
SG = "sg-0123456789abcdef0"


def declare(cluster: dict):
    config = platform_from(settings={"cluster": {**MINIMAL_SETTINGS["cluster"], **cluster}})

    def program():
        existing = ExistingCluster("cluster", config.settings.cluster)
        tags = DiscoveryTags("discovery", cluster_name=existing.name, subnets=config.settings.cluster.subnets,
                             security_group_id=existing.security_group_id, region=existing.region,
                             resolved_subnet_ids=existing.subnet_ids)
        pulumi.export("subnetSelectorTerms", tags.subnet_selector_terms)
        pulumi.export("securityGroupSelectorTags", tags.security_group_selector_tags)

    return run_component(program)


def tags(capture):
    return {r.inputs["resourceId"]: r.inputs for r in capture.of_type("aws:ec2/tag:Tag")}


def test_subnet_selector_is_the_discovery_tag_for_subnets_given_by_id():
    assert subnet_selector_terms(SubnetSelection(ids=SUBNETS), "acme") == [{"tags": {"karpenter.sh/discovery": "acme"}}]
    assert tagged_subnet_ids(SubnetSelection(ids=SUBNETS)) == SUBNETS


def test_subnet_selector_for_subnets_selected_by_tags_is_the_ids_found_never_the_tags():
    """Karpenter's DescribeSubnets filters are the selector's tags and nothing else
    (getFilterSets, pkg/providers/subnet/subnet.go, karpenter-provider-aws v1.14.1): a tag
    selector would reach every VPC of the account. The ids found in the cluster's VPC cannot."""
    selection = SubnetSelection(tags={"kubernetes.io/role/internal-elb": "1"})
    terms = subnet_selector_terms(selection, "acme", ["subnet-0b", "subnet-0a", "subnet-0b"])
    assert terms == [{"id": "subnet-0a"}, {"id": "subnet-0b"}]
    assert tagged_subnet_ids(selection) == []


def test_subnet_selector_refuses_a_tag_lookup_that_found_no_subnet():
    selection = SubnetSelection(tags={"kubernetes.io/role/internal-elb": "1"})
    with pytest.raises(pulumi.RunError, match="no subnet of the cluster's VPC has the tags kubernetes.io/role/internal-elb=1"):
        subnet_selector_terms(selection, "acme", [])


def test_subnet_selector_refuses_more_subnets_than_an_ec2nodeclass_takes():
    """EC2NodeClass v1.14.1 CRD: subnetSelectorTerms maxItems 30."""
    selection = SubnetSelection(tags={"tier": "private"})
    found = [f"subnet-{i:017x}" for i in range(MAX_SELECTOR_TERMS + 1)]
    assert len(subnet_selector_terms(selection, "acme", found[:MAX_SELECTOR_TERMS])) == MAX_SELECTOR_TERMS
    with pytest.raises(pulumi.RunError, match="31 subnets .* at most 30"):
        subnet_selector_terms(selection, "acme", found)


def test_discovery_tags_each_configured_subnet_and_the_cluster_security_group():
    capture = declare({"subnets": {"ids": SUBNETS}})
    assert tags(capture) == {
        resource: {"resourceId": resource, "key": DISCOVERY_TAG, "value": "test-cluster", "region": "us-east-1"}
        for resource in [*SUBNETS, CLUSTER_SECURITY_GROUP_ID]
    }
    assert capture.outputs["subnetSelectorTerms"] == [{"tags": {DISCOVERY_TAG: "test-cluster"}}]
    assert capture.outputs["securityGroupSelectorTags"] == {DISCOVERY_TAG: "test-cluster"}


def test_discovery_tags_the_configured_security_group_instead_of_the_cluster_one():
    capture = declare({"securityGroup": {"id": SG}})
    groups = [r for r in tags(capture) if r.startswith("sg-")]
    assert groups == [SG]


def test_discovery_tags_no_subnet_selected_by_tags_and_selects_the_ones_found_by_id():
    capture = declare({"subnets": {"tags": {"kubernetes.io/role/internal-elb": "1"}}})
    assert list(tags(capture)) == [CLUSTER_SECURITY_GROUP_ID]
    assert capture.outputs["subnetSelectorTerms"] == [{"id": s} for s in sorted(TAGGED_SUBNETS)]


def test_discovery_declares_tags_only_never_the_subnets_or_group():
    capture = declare({"subnets": {"ids": SUBNETS}, "securityGroup": {"id": SG}})
    types = {r.type for r in capture.resources}
    assert types == {"karpenter-platform:index:ExistingCluster", "karpenter-platform:index:DiscoveryTags", "aws:ec2/tag:Tag"}


@pytest.mark.parametrize("stack", STACKS)
def test_render_tags_exactly_one_security_group(stack):
    cluster = stack_platform(stack).settings.cluster
    groups = [r.inputs for r in render(stack).of_type("aws:ec2/tag:Tag") if r.inputs["resourceId"].startswith("sg-")]
    assert len(groups) == 1
    assert groups[0]["resourceId"] == (cluster.security_group.id or CLUSTER_SECURITY_GROUP_ID)
    assert groups[0]["key"] == DISCOVERY_TAG
    assert groups[0]["value"] == render(stack).outputs["clusterName"]


@pytest.mark.parametrize("stack", STACKS)
def test_render_tags_exactly_the_subnets_the_stack_names_by_id(stack):
    cluster = stack_platform(stack).settings.cluster
    subnets = sorted(r.inputs["resourceId"] for r in render(stack).of_type("aws:ec2/tag:Tag")
                     if r.inputs["resourceId"].startswith("subnet-"))
    assert subnets == sorted(cluster.subnets.ids)
    assert bool(subnets) == (stack != "staging")  # staging selects its subnets by tags
