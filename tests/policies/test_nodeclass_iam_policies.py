"""EC2NodeClass and IAM policies, passing and failing, built as the analyzer builds them."""

import json

from policies import model as m
from tests.policies.analyzer import UNKNOWN, messages, resource, run, urn_of
from tests.policies.builders import NODE_ROLE, NODE_ROLE_ARN, access_entry, iam_policy, node_role, nodeclass, trust


def _aws_side():
    return [node_role(), access_entry()]


# --- nodeclass-imdsv2-hop-limit-1 ---

def test_imdsv2_hop_limit_1_pass():
    assert run("nodeclass-imdsv2-hop-limit-1", [nodeclass()]) == []


def test_imdsv1_optional_tokens_fail():
    options = {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 1, "httpTokens": "optional"}
    assert messages("nodeclass-imdsv2-hop-limit-1", [nodeclass(metadata_options=options)]) == [
        "EC2NodeClass default metadataOptions.httpTokens is 'optional'; IMDSv2 needs 'required'"]


def test_imds_hop_limit_2_fail():
    options = {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 2, "httpTokens": "required"}
    assert messages("nodeclass-imdsv2-hop-limit-1", [nodeclass(metadata_options=options)]) == [
        "EC2NodeClass default metadataOptions.httpPutResponseHopLimit is 2.0; use 1 so pods cannot reach the "
        "node's credentials"]


def test_imds_disabled_pass():
    options = {"httpEndpoint": "disabled", "httpPutResponseHopLimit": 2, "httpTokens": "optional"}
    assert run("nodeclass-imdsv2-hop-limit-1", [nodeclass(metadata_options=options)]) == []


def test_imds_options_missing_fail():
    assert len(run("nodeclass-imdsv2-hop-limit-1", [nodeclass(metadata_options=None)])) == 1


# --- nodeclass-root-volume-encrypted ---

def test_root_volume_encrypted_pass():
    assert run("nodeclass-root-volume-encrypted", [nodeclass()]) == []


def test_root_volume_unencrypted_fail():
    devices = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "50Gi", "encrypted": False}},
               {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi", "encrypted": True}}]
    found = run("nodeclass-root-volume-encrypted", [nodeclass(block_devices=devices)])
    assert found == [(urn_of(m.NODECLASS, "ec2nodeclass-default"),
                      "EC2NodeClass default root volume /dev/xvda is not encrypted (ebs.encrypted must be true)")]


def test_root_volume_encryption_unset_fail():
    devices = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "50Gi"}}]
    assert len(run("nodeclass-root-volume-encrypted", [nodeclass(block_devices=devices)])) == 1


def test_no_block_devices_fail():
    assert len(run("nodeclass-root-volume-encrypted", [nodeclass(block_devices=None)])) == 1


# --- nodeclass-ami-pinned ---

def test_ami_pinned_alias_and_id_pass():
    assert run("nodeclass-ami-pinned", [nodeclass(ami_terms=[{"alias": "al2023@v20251117"}])]) == []
    assert run("nodeclass-ami-pinned", [nodeclass(ami_terms=[{"id": "ami-0123456789abcdef0"}])]) == []


def test_ami_latest_fail_in_prod():
    assert messages("nodeclass-ami-pinned", [nodeclass(ami_terms=[{"alias": "al2023@latest"}])]) == [
        "EC2NodeClass default selects its AMI with alias al2023@latest, which floats; pin a version "
        "(e.g. al2023@v20251117) or an AMI id"]


def test_ami_selected_by_tags_fail():
    [message] = messages("nodeclass-ami-pinned", [nodeclass(ami_terms=[{"tags": {"team": "platform"}}])])
    assert "a selector by tags" in message


def test_ami_pinned_is_disabled_in_dev_only():
    from pulumi_policy import EnforcementLevel

    from policies.pack import BY_NAME
    from policies.crossguard import build_policy

    levels = {env: build_policy(BY_NAME["nodeclass-ami-pinned"], env).enforcement_level for env in ("dev", "staging", "prod")}
    assert levels == {"dev": EnforcementLevel.DISABLED, "staging": EnforcementLevel.MANDATORY,
                      "prod": EnforcementLevel.MANDATORY}


# --- nodeclass-role-has-access-entry ---

def test_nodeclass_role_has_access_entry_pass():
    assert run("nodeclass-role-has-access-entry", [nodeclass(), *_aws_side()]) == []


def test_nodeclass_role_without_access_entry_fail():
    assert messages("nodeclass-role-has-access-entry", [nodeclass(role="SomeOtherRole"), *_aws_side()]) == [
        f"EC2NodeClass default uses role SomeOtherRole, but the EC2_LINUX access entry is for {NODE_ROLE}: "
        "its nodes could not join"]


def test_nodeclass_role_created_without_any_access_entry_fail():
    [message] = messages("nodeclass-role-has-access-entry", [nodeclass(), node_role()])
    assert "which this stack creates without an EC2_LINUX access entry" in message


def test_access_entry_of_other_type_does_not_count_fail():
    assert len(run("nodeclass-role-has-access-entry", [nodeclass(), node_role(), access_entry(kind="STANDARD")])) == 1


def test_nodeclass_role_access_managed_elsewhere_pass():
    assert run("nodeclass-role-has-access-entry", [nodeclass()]) == []


def test_access_entry_principal_unknown_followed_to_role_pass_and_fail():
    role = node_role()
    entry = access_entry(principal=UNKNOWN, depends={"principalArn": [role["urn"]]})
    assert run("nodeclass-role-has-access-entry", [nodeclass(), role, entry]) == []
    assert len(run("nodeclass-role-has-access-entry", [nodeclass(role="Other"), role, entry])) == 1


def test_access_entry_principal_unknown_unresolved_pass():
    assert run("nodeclass-role-has-access-entry", [nodeclass(role="Other"), access_entry(principal=UNKNOWN)]) == []


# --- iam-no-wildcard-action ---

SCOPED = {"Sid": "Describe", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"}


def test_iam_scoped_actions_pass():
    deny_all = {"Sid": "DenyHTTP", "Effect": "Deny", "Action": "sqs:*", "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    assert run("iam-no-wildcard-action", [iam_policy("p", [SCOPED, deny_all])]) == []


def test_iam_star_action_fail():
    found = run("iam-no-wildcard-action", [iam_policy("p", [{"Effect": "Allow", "Action": "*", "Resource": "*"}])])
    assert found == [(urn_of(m.IAM_POLICY, "p"), "Policy p policy statement 0 allows *; list the actions it needs")]


def test_iam_service_star_action_fail():
    statement = {"Sid": "Everything", "Effect": "Allow", "Action": ["ec2:DescribeImages", "iam:*"], "Resource": "*"}
    assert messages("iam-no-wildcard-action", [iam_policy("p", [statement])]) == [
        "Policy p policy statement Everything allows iam:*; list the actions it needs"]


def test_iam_not_action_fail():
    statement = {"Effect": "Allow", "NotAction": ["iam:*"], "Resource": "*"}
    assert len(run("iam-no-wildcard-action", [iam_policy("p", [statement])])) == 1


def test_iam_wildcard_in_inline_role_policy_fail():
    role = resource(m.IAM_ROLE_POLICY, "inline", {"role": "r", "policy": json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})})
    assert len(run("iam-no-wildcard-action", [role])) == 1


def test_iam_unknown_document_pass():
    assert run("iam-no-wildcard-action", [resource(m.IAM_POLICY, "p", {"policy": UNKNOWN})]) == []


# --- iam-passrole-node-role-only ---

def _passrole(*resources):
    return {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Action": ["iam:PassRole"], "Resource": list(resources)}


def test_passrole_on_node_role_pass():
    assert run("iam-passrole-node-role-only", [iam_policy("p", [_passrole(NODE_ROLE_ARN)]), *_aws_side()]) == []


def test_passrole_on_other_role_fail():
    other = "arn:aws:iam::123456789012:role/Admin"
    assert messages("iam-passrole-node-role-only", [iam_policy("p", [_passrole(other)]), *_aws_side()]) == [
        f"Policy p policy statement AllowPassingInstanceRole allows iam:PassRole on {other}, which is not the node "
        f"role ({NODE_ROLE})"]


def test_passrole_on_wildcard_fail_even_without_node_role():
    [message] = messages("iam-passrole-node-role-only", [iam_policy("p", [_passrole("*")])])
    assert "allows iam:PassRole on *; name the node role's ARN" in message


def test_passrole_via_iam_star_fail():
    statement = {"Effect": "Allow", "Action": "iam:Pass*", "Resource": "arn:aws:iam::123456789012:role/Admin"}
    assert len(run("iam-passrole-node-role-only", [iam_policy("p", [statement]), *_aws_side()])) == 1


# --- iam-document-size ---

def test_document_under_limit_pass():
    assert run("iam-document-size", [iam_policy("p", [SCOPED])]) == []


def test_document_over_limit_fail():
    actions = [f"ec2:DescribeSomething{i:04d}" for i in range(300)]
    found = messages("iam-document-size", [iam_policy("p", [{"Effect": "Allow", "Action": actions, "Resource": "*"}])])
    assert len(found) == 1 and found[0].startswith("Policy p policy is ") and found[0].endswith(
        "characters minified (limit 6144); split it into several policies")


def test_document_size_counts_minified_text_pass():
    # Whitespace does not count: 300 short actions pretty-printed are long, minified they fit.
    actions = [f"ec2:D{i:03d}" for i in range(300)]
    text = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]},
                      indent=8)
    assert len(text) > 6144
    assert run("iam-document-size", [resource(m.IAM_POLICY, "p", {"policy": text})]) == []


def test_trust_policy_not_json_fail():
    role = resource(m.IAM_ROLE, "r", {"name": "r", "assumeRolePolicy": "{not json"})
    [message] = messages("iam-document-size", [role])
    assert message.startswith("Role r assumeRolePolicy is not a JSON document")


def test_document_size_configurable_fail():
    assert len(run("iam-document-size", [node_role()], config={"maxCharacters": 50})) == 1


def test_trust_helper_is_json():
    assert json.loads(trust("ec2.amazonaws.com"))["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
