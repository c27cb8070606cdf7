"""KarpenterAws under mocks: what each config declares, compared with upstream, and the shipped renders."""

import json

import pulumi
import pytest

from components import iam
from components.aws import KarpenterAws
from components.cluster import ExistingCluster
from offline.placeholders import ACCOUNT_ID, oidc_issuer
from offline.render import write_build
from tests import upstream
from tests.harness import MINIMAL_SETTINGS, STACKS, platform_from, policy_document, render, run_component

CLUSTER = MINIMAL_SETTINGS["cluster"]["name"]
CONTROLLER = "karpenter-aws-controller"
NODE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/KarpenterNodeRole-{CLUSTER}"
QUEUE_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{CLUSTER}"
EXISTING_ROLE = f"arn:aws:iam::{ACCOUNT_ID}:role/platform/nodes/SharedNodeRole"
BOUNDARY = f"arn:aws:iam::{ACCOUNT_ID}:policy/PlatformBoundary"
OUTPUTS = ("controller_role_arn", "controller_role_name", "node_role_name", "node_role_arn", "queue_name",
           "queue_arn", "instance_profile_name", "service_account_annotations", "subnet_selector_terms")


def declare(karpenter: dict | None = None, cluster: dict | None = None):
    """KarpenterAws for a minimal stack plus `karpenter` settings; its attributes exported by name."""
    config = platform_from(settings={"cluster": {**MINIMAL_SETTINGS["cluster"], **(cluster or {})},
                                     "karpenter": karpenter or {}})

    def program():
        aws_side = KarpenterAws("karpenter-aws", config, ExistingCluster("cluster", config.settings.cluster))
        for attribute in OUTPUTS:
            pulumi.export(attribute, getattr(aws_side, attribute))

    return run_component(program)


@pytest.fixture(scope="module")
def pod_identity():
    return declare()


@pytest.fixture(scope="module")
def irsa():
    return declare({"identity": "irsa", "namespace": "karpenter", "serviceAccount": "karpenter-controller"})


def expected_policies(cluster=CLUSTER, node_role_arn=NODE_ROLE_ARN, queue_arn=QUEUE_ARN):
    return upstream.controller_policies(upstream.placeholders(
        partition="aws", region="us-east-1", account_id=ACCOUNT_ID, cluster=cluster,
        node_role_arn=node_role_arn, queue_arn=queue_arn))


def declared_policies(capture) -> dict:
    return {key: capture.named(f"{CONTROLLER}-{iam.CONTROLLER_POLICY_SLUGS[key]}", "aws:iam/policy:Policy").inputs
            for key in iam.CONTROLLER_POLICY_KEYS
            if any(r.name == f"{CONTROLLER}-{iam.CONTROLLER_POLICY_SLUGS[key]}" for r in capture.resources)}


@pytest.mark.parametrize("key", iam.CONTROLLER_POLICY_KEYS)
@pytest.mark.slow
def test_declared_controller_policy_equals_upstream_statement_by_statement(pod_identity, key):
    expected = expected_policies()[key]
    declared = declared_policies(pod_identity)[key]
    assert declared["name"] == expected["managedPolicyName"]
    statements = json.loads(declared["policy"])["Statement"]
    assert len(statements) == len(expected["statements"])
    for ours, theirs in zip(statements, expected["statements"], strict=True):
        for field in upstream.STATEMENT_FIELDS:
            assert ours.get(field) == theirs.get(field), f"{key} {theirs['Sid']} {field}"


def test_controller_role_has_the_six_policies_attached(pod_identity):
    attachments = {r.inputs["policyArn"] for r in pod_identity.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                   if r.inputs["role"] == f"{CLUSTER}-karpenter"}
    assert attachments == {f"arn:aws:iam::{ACCOUNT_ID}:policy/{p['managedPolicyName']}" for p in expected_policies().values()}


def test_pod_identity_role_trusts_eks_pods_and_is_associated_with_the_service_account(pod_identity):
    role = pod_identity.named(CONTROLLER, "aws:iam/role:Role").inputs
    assert role["name"] == f"{CLUSTER}-karpenter"
    assert json.loads(role["assumeRolePolicy"]) == iam.pod_identity_trust()
    [association] = pod_identity.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert {k: association.inputs[k] for k in ("clusterName", "namespace", "serviceAccount", "roleArn")} == {
        "clusterName": CLUSTER, "namespace": "kube-system", "serviceAccount": "karpenter",
        "roleArn": f"arn:aws:iam::{ACCOUNT_ID}:role/{CLUSTER}-karpenter"}
    assert pod_identity.outputs["service_account_annotations"] == {}


def test_irsa_role_trusts_the_oidc_provider_for_the_service_account_only(irsa):
    provider = oidc_issuer("us-east-1").removeprefix("https://")
    trust = policy_document(irsa, CONTROLLER, "assumeRolePolicy")
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Federated": f"arn:aws:iam::{ACCOUNT_ID}:oidc-provider/{provider}"}
    assert statement["Action"] == ["sts:AssumeRoleWithWebIdentity"]
    assert statement["Condition"] == {"StringEquals": {
        f"{provider}:sub": "system:serviceaccount:karpenter:karpenter-controller", f"{provider}:aud": "sts.amazonaws.com"}}
    assert irsa.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation") == []
    assert irsa.outputs["service_account_annotations"] == {
        "eks.amazonaws.com/role-arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{CLUSTER}-karpenter"}


def test_node_role_trusts_ec2_with_upstreams_four_managed_policies(pod_identity):
    role = pod_identity.named("karpenter-aws-node", "aws:iam/role:Role").inputs
    reference = upstream.facts()["nodeRole"]
    assert role["name"] == reference["roleName"].replace("${ClusterName}", CLUSTER)
    assert json.loads(role["assumeRolePolicy"]) == upstream.substitute(reference["assumeRolePolicy"],
                                                                         {"${AWS::URLSuffix}": "amazonaws.com"})
    attached = sorted(r.inputs["policyArn"] for r in pod_identity.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                      if r.inputs["role"] == role["name"])
    assert attached == sorted(upstream.substitute(reference["managedPolicyArns"], {"${AWS::Partition}": "aws"}))


def test_node_access_entry_is_ec2_linux_for_the_node_role(pod_identity):
    [entry] = pod_identity.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs == {"clusterName": CLUSTER, "principalArn": NODE_ROLE_ARN, "type": "EC2_LINUX", "region": "us-east-1"}


def test_outputs_name_roles_and_queue(pod_identity):
    assert pod_identity.outputs["controller_role_arn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/{CLUSTER}-karpenter"
    assert pod_identity.outputs["controller_role_name"] == f"{CLUSTER}-karpenter"
    assert pod_identity.outputs["node_role_name"] == f"KarpenterNodeRole-{CLUSTER}"
    assert pod_identity.outputs["node_role_arn"] == NODE_ROLE_ARN
    assert (pod_identity.outputs["queue_name"], pod_identity.outputs["queue_arn"]) == (CLUSTER, QUEUE_ARN)
    assert pod_identity.outputs["instance_profile_name"] is None
    assert pod_identity.outputs["subnet_selector_terms"] == [{"tags": {"karpenter.sh/discovery": CLUSTER}}]


def test_no_interruption_handling_declares_no_queue_and_drops_the_interruption_policy():
    capture = declare({"interruptionHandling": False})
    assert [r for r in capture.resources if r.type.startswith(("aws:sqs", "aws:cloudwatch"))] == []
    assert sorted(declared_policies(capture)) == sorted(iam.controller_policy_keys(interruption=False))
    assert len(capture.of_type("aws:iam/policy:Policy")) == 5
    assert capture.outputs["queue_name"] is None


def test_existing_node_role_is_referenced_not_created():
    capture = declare({"nodeRole": {"existingArn": EXISTING_ROLE}})
    assert [r.name for r in capture.of_type("aws:iam/role:Role")] == [CONTROLLER]
    attachments = capture.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachments and all(r.inputs["role"] == f"{CLUSTER}-karpenter" for r in attachments)
    assert capture.outputs["node_role_name"] == "SharedNodeRole"
    assert capture.outputs["node_role_arn"] == EXISTING_ROLE
    [entry] = capture.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["principalArn"] == EXISTING_ROLE
    integration = json.loads(declared_policies(capture)["IAMIntegration"]["policy"])
    assert integration["Statement"][0]["Resource"] == [EXISTING_ROLE]


def test_existing_node_role_with_its_own_access_entry_declares_none():
    capture = declare({"nodeRole": {"existingArn": EXISTING_ROLE, "createAccessEntry": False}})
    assert capture.of_type("aws:eks/accessEntry:AccessEntry") == []


def test_instance_profile_only_when_asked_and_holding_the_node_role(pod_identity):
    assert pod_identity.of_type("aws:iam/instanceProfile:InstanceProfile") == []
    capture = declare({"nodeRole": {"createInstanceProfile": True}})
    [profile] = capture.of_type("aws:iam/instanceProfile:InstanceProfile")
    assert profile.inputs["role"] == f"KarpenterNodeRole-{CLUSTER}"
    assert capture.outputs["instance_profile_name"] == profile.inputs["name"] == f"KarpenterNodeInstanceProfile-{CLUSTER}"


def test_permissions_boundary_is_set_on_every_role_the_stack_creates():
    capture = declare({"permissionsBoundary": BOUNDARY})
    roles = capture.of_type("aws:iam/role:Role")
    assert len(roles) == 2
    assert all(r.inputs["permissionsBoundary"] == BOUNDARY for r in roles)


def test_no_permissions_boundary_by_default(pod_identity):
    roles = pod_identity.of_type("aws:iam/role:Role")
    assert roles and all("permissionsBoundary" not in r.inputs for r in roles)


def test_extra_statements_become_one_inline_policy_on_the_controller_role():
    statement = {"Sid": "Kms", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": ["*"]}
    capture = declare({"extraIamStatements": [statement]})
    [extra] = capture.of_type("aws:iam/rolePolicy:RolePolicy")
    assert (extra.inputs["role"], extra.inputs["name"]) == (f"{CLUSTER}-karpenter", "KarpenterControllerExtra")
    assert json.loads(extra.inputs["policy"]) == {"Version": "2012-10-17", "Statement": [statement]}


def test_100_character_cluster_name_keeps_every_name_and_document_within_aws_limits():
    long_name = "c" * 100
    capture = declare({"nodeRole": {"createInstanceProfile": True}}, cluster={"name": long_name})
    limits = {"aws:iam/role:Role": 64, "aws:iam/policy:Policy": 128, "aws:iam/instanceProfile:InstanceProfile": 128,
              "aws:sqs/queue:Queue": 80, "aws:cloudwatch/eventRule:EventRule": 64}
    for resource in capture.resources:
        if resource.type in limits:
            assert len(resource.inputs["name"]) <= limits[resource.type], resource.name
    sizes = {p.name: iam.minified_size(json.loads(p.inputs["policy"])) for p in capture.of_type("aws:iam/policy:Policy")}
    assert len(sizes) == 6
    assert all(size < iam.MANAGED_POLICY_MAX_CHARS for size in sizes.values()), sizes
    # The full name is in the conditions (only the queue's own name is shortened).
    assert long_name in capture.named(f"{CONTROLLER}-node-lifecycle").inputs["policy"]
    assert sizes[f"{CONTROLLER}-node-lifecycle"] > 3000


def test_aws_resources_are_children_of_the_component(pod_identity):
    components = {r.urn for r in pod_identity.resources if r.type.startswith("karpenter-platform:index:")
                  and r.type != "karpenter-platform:index:ExistingCluster"}
    [root] = pod_identity.of_type("karpenter-platform:index:KarpenterAws")
    for resource in pod_identity.resources:
        if resource.type.startswith("aws:"):
            assert resource.parent in components, resource.name
        elif resource.urn in components and resource is not root:
            assert resource.parent == root.urn


# --- the shipped stacks -----------------------------------------------------------------------

AWS_COUNTS = {
    "aws:iam/role:Role": 2, "aws:iam/policy:Policy": 6, "aws:iam/rolePolicyAttachment:RolePolicyAttachment": 10,
    "aws:eks/accessEntry:AccessEntry": 1, "aws:sqs/queue:Queue": 1, "aws:sqs/queuePolicy:QueuePolicy": 1,
    "aws:cloudwatch/eventRule:EventRule": 5, "aws:cloudwatch/eventTarget:EventTarget": 5,
}
IAM_FILES = {f"karpenter-aws-controller-{slug}.json" for slug in iam.CONTROLLER_POLICY_SLUGS.values()} | {
    "karpenter-aws-controller-trust.json", "karpenter-aws-node-trust.json", "karpenter-aws-interruption-queue-policy.json"}


@pytest.mark.parametrize("stack", STACKS)
def test_render_declares_the_whole_aws_side(stack):
    # Only KarpenterAws' children: other components (the provisioner) declare roles of their own.
    capture = render(stack)
    by_urn = capture.by_urn()

    def under_karpenter_aws(resource):
        while resource.parent:
            resource = by_urn[resource.parent]
            if resource.type == "karpenter-platform:index:KarpenterAws":
                return True
        return False

    ours = [r for r in capture.resources if under_karpenter_aws(r)]
    counts = {t: sum(r.type == t for r in ours) for t in AWS_COUNTS}
    assert counts == AWS_COUNTS
    associations = sum(r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation" for r in ours)
    assert associations == (0 if stack == "prod" else 1)  # prod uses IRSA


@pytest.mark.parametrize("stack", STACKS)
def test_render_policies_equal_upstream_for_the_stacks_cluster(stack):
    capture = render(stack)
    cluster = capture.outputs["clusterName"]
    expected = expected_policies(cluster, f"arn:aws:iam::{ACCOUNT_ID}:role/KarpenterNodeRole-{cluster}",
                                 f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{cluster}")
    for key, inputs in declared_policies(capture).items():
        assert json.loads(inputs["policy"])["Statement"] == expected[key]["statements"], key


@pytest.mark.parametrize("stack", STACKS)
def test_render_exports_roles_queue_and_cluster(stack):
    outputs = render(stack).outputs
    cluster = outputs["clusterName"]
    assert outputs["controllerRoleArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/{cluster}-karpenter"
    assert outputs["nodeRoleName"] == f"KarpenterNodeRole-{cluster}"
    assert outputs["nodeRoleArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/KarpenterNodeRole-{cluster}"
    assert outputs["interruptionQueueName"] == cluster
    assert outputs["controllerRoleName"] == f"{cluster}-karpenter"
    assert outputs["interruptionQueueArn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{cluster}"


@pytest.mark.parametrize("stack", STACKS)
def test_render_writes_every_policy_document_to_the_iam_folder(stack, tmp_path):
    capture = render(stack)
    write_build(capture, tmp_path / stack)
    written = {p.name: json.loads(p.read_text()) for p in (tmp_path / stack / "iam").iterdir()}
    assert {name for name in written if name.startswith("karpenter-aws-")} == IAM_FILES
    assert written["karpenter-aws-controller-node-lifecycle.json"] == policy_document(capture, f"{CONTROLLER}-node-lifecycle")
    assert written["karpenter-aws-controller-trust.json"] == policy_document(capture, CONTROLLER, "assumeRolePolicy")
