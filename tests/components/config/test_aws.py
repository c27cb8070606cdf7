"""Config rules of the AWS side: one security group only, extra statements IAM will accept."""

import pytest

from components.config import ConfigError
from tests.harness import MINIMAL_SETTINGS, platform_from

SG_A, SG_B = "sg-0123456789abcdef0", "sg-0fedcba9876543210"


def cluster_with(**extra):
    return {"cluster": {**MINIMAL_SETTINGS["cluster"], **extra}}


def issues_of(settings) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        platform_from(settings=settings)
    return [str(issue) for issue in caught.value.issues]


@pytest.mark.parametrize("group,path", [
    ([SG_A, SG_B], "karpenter-platform:cluster.securityGroup"),
    ({"id": [SG_A, SG_B]}, "karpenter-platform:cluster.securityGroup.id"),
    ({"ids": [SG_A, SG_B]}, "karpenter-platform:cluster.securityGroup"),
    ([SG_A], "karpenter-platform:cluster.securityGroup"),
], ids=["list", "id-list", "ids-key", "one-element-list"])
def test_security_group_config_naming_several_groups_is_refused_with_reason(group, path):
    [issue] = issues_of(cluster_with(securityGroup=group))
    assert issue.startswith(f"stacks/Pulumi.test.yaml: {path}: exactly one security group gets karpenter.sh/discovery")
    assert "AWS Load Balancer Controller" in issue


def test_security_groups_key_on_cluster_is_refused_with_reason():
    [issue] = issues_of(cluster_with(securityGroups=[SG_A, SG_B]))
    assert issue.startswith("stacks/Pulumi.test.yaml: karpenter-platform:cluster: securityGroups is not a key: "
                            "exactly one security group gets karpenter.sh/discovery")


def test_security_group_single_id_is_accepted():
    assert platform_from(settings=cluster_with(securityGroup={"id": SG_A})).settings.cluster.security_group.id == SG_A


def test_extra_iam_statements_with_duplicate_sids_are_refused():
    statement = {"Sid": "Kms", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}
    [issue] = issues_of({"karpenter": {"extraIamStatements": [statement, statement]}})
    assert issue == ("stacks/Pulumi.test.yaml: karpenter-platform:karpenter.extraIamStatements: "
                     "Sid 'Kms' is used twice; IAM needs unique Sids in a policy")


def test_extra_iam_statements_beyond_inline_policy_limit_are_refused():
    statements = [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::bucket-{i:04d}/{'k' * 90}/*"}
                  for i in range(100)]
    [issue] = issues_of({"karpenter": {"extraIamStatements": statements}})
    assert "IAM allows 10240 for a role's inline policies" in issue
    assert issue.startswith("stacks/Pulumi.test.yaml: karpenter-platform:karpenter.extraIamStatements: the statements make a ")


def test_node_role_defaults_create_access_entry_but_no_instance_profile():
    node_role = platform_from().settings.karpenter.node_role
    assert (node_role.existing_arn, node_role.create_access_entry, node_role.create_instance_profile) == (None, True, False)
