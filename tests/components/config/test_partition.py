"""ARNs of another partition than the cluster's region are config errors with their key path (the
partition table of the AWS SDKs, aws-sdk-go-v2 internal/endpoints/awsrulesfn/partitions.json)."""

import copy

import pytest

from components.config.partition import partition_for_region
from offline import render
from tests.harness import MINIMAL_SETTINGS, write_project


def settings(region, karpenter):
    out = copy.deepcopy(MINIMAL_SETTINGS)
    out["cluster"]["region"] = region
    out["karpenter"] = karpenter
    return out


@pytest.mark.parametrize("region,partition", [("cn-north-1", "aws-cn"), ("cn-northwest-1", "aws-cn"),
                                              ("us-gov-west-1", "aws-us-gov"), ("us-isob-east-1", "aws-iso-b"),
                                              ("us-iso-east-1", "aws-iso"), ("eu-west-1", "aws")])
def test_partition_for_region_follows_the_sdk_table(region, partition):
    assert partition_for_region(region) == partition


@pytest.mark.parametrize("region,karpenter,path", [
    ("cn-north-1", {"nodeRole": {"existingArn": "arn:aws:iam::123456789012:role/nodes"}},
     "karpenter-platform:karpenter.nodeRole.existingArn"),
    ("us-gov-west-1", {"permissionsBoundary": "arn:aws:iam::123456789012:policy/boundary"},
     "karpenter-platform:karpenter.permissionsBoundary"),
    ("us-east-1", {"nodeRole": {"existingArn": "arn:aws-cn:iam::123456789012:role/nodes"}},
     "karpenter-platform:karpenter.nodeRole.existingArn"),
])
def test_offline_render_refuses_an_arn_of_another_partition_with_its_key_path(tmp_path, capsys, region, karpenter, path):
    root = write_project(tmp_path, settings(region, karpenter), {})
    assert render.main(["test", "--project-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"stacks/Pulumi.test.yaml: {path}: " in err
    assert f"region {region} is in '{partition_for_region(region)}'" in err
    assert not (root / "build").exists()


def test_arn_of_the_regions_partition_is_accepted(tmp_path, capsys):
    root = write_project(tmp_path, settings("cn-north-1", {"nodeRole": {"existingArn": "arn:aws-cn:iam::123456789012:role/nodes"}}), {})
    from components.platform import load_platform

    assert load_platform(root, "test").settings.cluster.region == "cn-north-1"
