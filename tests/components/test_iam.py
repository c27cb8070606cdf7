"""The pure IAM builders against upstream's getting-started template, statement by statement."""

import pytest

from components import iam
from tests import upstream

ACCOUNT = "123456789012"
SCOPES = [
    iam.Scope("aws", "us-east-1", ACCOUNT, "acme-dev"),
    iam.Scope("aws-cn", "cn-north-1", "210987654321", "cn-cluster"),
    iam.Scope("aws-us-gov", "us-gov-west-1", ACCOUNT, "gov_cluster-2"),
]
LONG_CLUSTER = "c" * 100  # EKS's maximum cluster name length


def node_role_arn(scope: iam.Scope) -> str:
    return f"arn:{scope.partition}:iam::{scope.account_id}:role/{iam.node_role_name(scope.cluster_name)}"


def queue_arn(scope: iam.Scope) -> str:
    return f"arn:{scope.partition}:sqs:{scope.region}:{scope.account_id}:{scope.cluster_name}"


def expected_policies(scope: iam.Scope) -> dict:
    return upstream.controller_policies(upstream.placeholders(
        partition=scope.partition, region=scope.region, account_id=scope.account_id, cluster=scope.cluster_name,
        node_role_arn=node_role_arn(scope), queue_arn=queue_arn(scope)))


def built_policies(scope: iam.Scope) -> dict:
    return iam.controller_policies(scope, node_role_arn=node_role_arn(scope), queue_arn=queue_arn(scope))


@pytest.mark.parametrize("scope", SCOPES, ids=lambda s: s.partition)
@pytest.mark.parametrize("key", iam.CONTROLLER_POLICY_KEYS)
def test_controller_policy_equals_upstream_statement_by_statement(scope, key):
    expected = expected_policies(scope)[key]
    built = built_policies(scope)[key]
    assert built["Version"] == expected["policyDocumentVersion"]
    assert [s.get("Sid") for s in built["Statement"]] == [s["Sid"] for s in expected["statements"]]
    for ours, theirs in zip(built["Statement"], expected["statements"], strict=True):
        for field in upstream.STATEMENT_FIELDS:
            assert ours.get(field) == theirs.get(field), f"{key} {theirs['Sid']} {field}"
        assert set(ours) == set(theirs), f"{key} {theirs['Sid']}: extra or missing keys"


def test_controller_policies_are_upstreams_six_with_18_statements():
    built = built_policies(SCOPES[0])
    assert list(built) == [p["logicalId"].removesuffix("Policy") for p in upstream.facts()["controllerPolicies"]]
    assert sum(len(d["Statement"]) for d in built.values()) == 18


def test_controller_policies_without_queue_drop_the_interruption_policy():
    built = iam.controller_policies(SCOPES[0], node_role_arn=node_role_arn(SCOPES[0]), queue_arn=None)
    assert list(built) == ["NodeLifecycle", "IAMIntegration", "EKSIntegration", "ZonalShift", "ResourceDiscovery"]
    assert "sqs:ReceiveMessage" not in str(built)
    assert iam.controller_policy_keys(interruption=False) == list(built)


def test_controller_policy_names_equal_upstream_managed_policy_names():
    expected = expected_policies(SCOPES[0])
    for key in iam.CONTROLLER_POLICY_KEYS:
        assert iam.controller_policy_name(key, "acme-dev") == expected[key]["managedPolicyName"]


@pytest.mark.parametrize("partition,region", [("aws", "ap-southeast-5"), ("aws-us-gov", "us-gov-west-1"),
                                               ("aws-iso-b", "us-isob-east-1")])
def test_controller_policies_fit_iam_limit_with_100_character_cluster_name(partition, region):
    scope = iam.Scope(partition, region, ACCOUNT, LONG_CLUSTER)
    # The longest ARNs the policies can name: a role with a deep path, an 80-character queue name.
    role = f"arn:{partition}:iam::{ACCOUNT}:role/{'p' * 200}/{'r' * 64}"
    queue = f"arn:{partition}:sqs:{region}:{ACCOUNT}:{'q' * 80}"
    sizes = {key: iam.minified_size(doc)
             for key, doc in iam.controller_policies(scope, node_role_arn=role, queue_arn=queue).items()}
    assert all(size < iam.MANAGED_POLICY_MAX_CHARS for size in sizes.values()), sizes
    assert sizes["NodeLifecycle"] > 3000  # the biggest one; measured, not assumed empty
    assert LONG_CLUSTER in str(iam.controller_policies(scope, node_role_arn=role, queue_arn=queue))


def test_minified_size_ignores_whitespace():
    document = iam.document([{"Effect": "Allow", "Action": ["a:b"], "Resource": ["*"]}])
    assert iam.minified_size(document) == len('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["a:b"],"Resource":["*"]}]}')


def test_controller_policy_names_fit_128_characters_with_100_character_cluster_name():
    names = [iam.controller_policy_name(key, LONG_CLUSTER) for key in iam.CONTROLLER_POLICY_KEYS]
    assert max(map(len, names)) == 128
    assert all(name.startswith(f"KarpenterController{key}Policy-ccc") for name, key in zip(names, iam.CONTROLLER_POLICY_KEYS))


def test_pod_identity_trust_lets_eks_pods_assume_and_tag_session():
    assert iam.pod_identity_trust() == {"Version": "2012-10-17", "Statement": [{
        "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }]}


def test_irsa_trust_federates_the_oidc_provider_with_sub_and_aud_conditions():
    issuer = "https://oidc.eks.eu-west-1.amazonaws.com/id/ABCDEF0123456789"
    trust = iam.irsa_trust(partition="aws", account_id=ACCOUNT, issuer_url=issuer, namespace="karpenter",
                           service_account="karpenter-controller")
    provider = "oidc.eks.eu-west-1.amazonaws.com/id/ABCDEF0123456789"
    assert trust == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{provider}"},
        "Action": ["sts:AssumeRoleWithWebIdentity"],
        "Condition": {"StringEquals": {
            f"{provider}:sub": "system:serviceaccount:karpenter:karpenter-controller",
            f"{provider}:aud": "sts.amazonaws.com",
        }},
    }]}


@pytest.mark.parametrize("suffix", ["amazonaws.com", "amazonaws.com.cn"])
def test_node_trust_equals_upstream_assume_role_policy(suffix):
    expected = upstream.substitute(upstream.facts()["nodeRole"]["assumeRolePolicy"], {"${AWS::URLSuffix}": suffix})
    assert iam.node_trust(suffix) == expected


def test_node_managed_policies_equal_upstreams_four():
    expected = upstream.substitute(upstream.facts()["nodeRole"]["managedPolicyArns"], {"${AWS::Partition}": "aws-cn"})
    assert sorted(iam.node_managed_policy_arns("aws-cn").values()) == sorted(expected)


def test_role_names_equal_upstream_for_a_short_cluster_name():
    attachment = upstream.facts()["controllerRoleAttachment"]
    assert iam.controller_role_name("acme-dev") == attachment["roleName"].replace("${ClusterName}", "acme-dev")
    assert iam.node_role_name("acme-dev") == upstream.facts()["nodeRole"]["roleName"].replace("${ClusterName}", "acme-dev")


def test_role_names_fit_64_characters_with_100_character_cluster_name():
    other = "c" * 99 + "d"
    for build in (iam.controller_role_name, iam.node_role_name):
        assert len(build(LONG_CLUSTER)) == 64
        assert build(LONG_CLUSTER) != build(other)
    assert iam.controller_role_name(LONG_CLUSTER).endswith("-karpenter")
    assert iam.node_role_name(LONG_CLUSTER).startswith("KarpenterNodeRole-")
    assert len(iam.node_instance_profile_name(LONG_CLUSTER)) == 128


def test_role_name_from_arn_drops_the_path():
    assert iam.role_name_from_arn("arn:aws:iam::123456789012:role/teams/platform/NodeRole") == "NodeRole"
    assert iam.role_name_from_arn("arn:aws-cn:iam::123456789012:role/NodeRole") == "NodeRole"


def test_role_name_from_arn_refuses_a_policy_arn():
    with pytest.raises(ValueError, match="not an IAM role ARN"):
        iam.role_name_from_arn("arn:aws:iam::123456789012:policy/NodeRole")


def test_extra_policy_wraps_statements_and_is_none_without_any():
    statement = {"Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": ["*"]}
    assert iam.extra_policy([statement]) == {"Version": "2012-10-17", "Statement": [statement]}
    assert iam.extra_policy([]) is None
