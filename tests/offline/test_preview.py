"""The program as `pulumi preview` sees it (`python -m offline.render STACK --preview`): every IAM
document, the queue policy and the access entry's principal are known there, so the policy
pack's IAM checks run at preview; what only the provider computes stays unknown."""

import functools
import json
import subprocess
import sys

import pytest

from offline.monitor import UNKNOWN
from offline.placeholders import ACCOUNT_ID
from offline.render import render_stack, unknown_paths
from policies.check import resource_from_render
from policies.engine import evaluate
from policies.model import UNKNOWN as POLICY_UNKNOWN
from policies.model import Stack
from tests.harness import PROJECT_DIR, STACKS, render, write_project

DOCUMENTS = {  # resource type -> the input holding a JSON policy document
    "aws:iam/policy:Policy": "policy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/role:Role": "assumeRolePolicy",
    "aws:sqs/queuePolicy:QueuePolicy": "policy",
}


@functools.lru_cache(maxsize=None)
def preview(stack: str):
    return render_stack(PROJECT_DIR, stack, preview=True)


def documents(capture) -> dict[str, object]:
    return {r.name: r.inputs[DOCUMENTS[r.type]] for r in capture.resources if r.type in DOCUMENTS}


def policy_stack(capture, environment: str) -> Stack:
    return Stack(environment, tuple(resource_from_render(r.to_json()) for r in capture.resources))


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.slow
def test_preview_knows_every_iam_document_and_the_same_ones_up_applies(stack):
    declared = documents(preview(stack))
    # controller role + its policies, node role (prod: IRSA trust), queue policy at least
    assert len(declared) >= 9
    for name, text in declared.items():
        assert isinstance(text, str) and UNKNOWN not in text, f"{stack}: {name} is not known at preview"
        json.loads(text)
    assert declared == documents(render(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_preview_knows_the_access_entry_principal_as_the_node_role_arn(stack):
    capture = preview(stack)
    [entry] = capture.of_type("aws:eks/accessEntry:AccessEntry")
    node_role = capture.named("karpenter-aws-node", "aws:iam/role:Role").inputs["name"]
    assert entry.inputs["principalArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/{node_role}"
    assert capture.outputs["nodeRoleArn"] == entry.inputs["principalArn"]


@pytest.mark.parametrize("stack", STACKS)
def test_preview_leaves_only_provider_computed_attributes_unknown(stack):
    """A real preview does not know an ARN, URL or digest a provider computes on create: those
    stay unknown here too (so this is not an `up` render with another name), and nothing else does."""
    unknown = unknown_paths(preview(stack))
    computed = {"roleArn", "policyArn", "queueUrl", "tags[0]", "registries[0].address", "registries[0].username",
                "spec.template.spec.containers[0].image"}
    assert unknown, "a preview must leave the provider-computed attributes unknown"
    assert {path for paths in unknown.values() for path in paths} <= computed
    assert unknown["karpenter-aws-interruption-queue-policy"] == ["queueUrl"]
    assert all(path == "policyArn" for name, paths in unknown.items() if name.endswith("-attachment") for path in paths)


def test_preview_event_targets_name_the_queue_and_wait_for_it():
    capture = preview("dev")
    queue = capture.named("karpenter-aws-interruption-queue")
    targets = capture.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5
    for target in targets:
        assert target.inputs["arn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:acme-dev"
        assert queue.urn in target.options["dependsOn"]


def test_preview_access_entry_waits_for_the_node_role_it_names():
    capture = preview("dev")
    entry = capture.named("karpenter-aws-node-access-entry")
    assert capture.named("karpenter-aws-node", "aws:iam/role:Role").urn in entry.options["dependsOn"]
    assert entry.options["deleteBeforeReplace"] is True  # EKS takes one entry per principal


@pytest.mark.parametrize("stack", STACKS)
def test_policy_pack_judges_the_iam_documents_at_preview(stack):
    """Every IAM policy finds its documents known: no finding at preview that the full render
    does not have, and the node role the IAM policies key on is resolved."""
    capture = preview(stack)
    at_preview = policy_stack(capture, stack)
    documents_seen = [r for r in at_preview if r.type in DOCUMENTS and r.props[DOCUMENTS[r.type]] is not POLICY_UNKNOWN]
    assert len(documents_seen) == len(documents(capture))
    entry = at_preview.of_type("aws:eks/accessEntry:AccessEntry")[0]
    assert isinstance(entry.props["principalArn"], str)
    assert {(f.policy, f.label) for f in evaluate(at_preview)} == {
        (f.policy, f.label) for f in evaluate(policy_stack(render(stack), stack))}


def test_policy_pack_at_preview_reports_a_wildcard_controller_statement(tmp_path):
    project = write_project(tmp_path, {
        "cluster": {"name": "acme", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}},
        "karpenter": {"extraIamStatements": [{"Sid": "Everything", "Effect": "Allow", "Action": "ec2:*",
                                              "Resource": "*"}]},
        "teams": [],
    }, {}, raw_files={"__main__.py": (PROJECT_DIR / "__main__.py").read_text()})
    findings = evaluate(policy_stack(render_stack(project, "test", preview=True), "prod"))
    assert [(f.policy, f.label) for f in findings if f.policy == "iam-no-wildcard-action"] == [
        ("iam-no-wildcard-action", "RolePolicy karpenter-aws-controller-extra")]


def test_policy_check_reads_the_renders_unknown_marker_as_unknown():
    resource = resource_from_render({"type": "aws:eks/podIdentityAssociation:PodIdentityAssociation", "name": "p",
                                     "inputs": {"roleArn": UNKNOWN, "tags": {"a": [UNKNOWN, "x"]}, "namespace": "ns"}})
    assert resource.props["roleArn"] is POLICY_UNKNOWN
    assert resource.props["tags"] == {"a": [POLICY_UNKNOWN, "x"]}
    assert resource.props["namespace"] == "ns"


@pytest.mark.slow
def test_render_preview_command_writes_build_stack_preview_then_runs_the_policy_pack(tmp_path):
    out = tmp_path / "staging-preview"
    result = subprocess.run([sys.executable, "-m", "offline.render", "staging", "--preview", "--out", str(out)],
                            cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "as `pulumi preview` sees it" in result.stdout
    assert "Policy pack over 55 resources, environment staging" in result.stdout
    resources = json.loads((out / "resources.json").read_text())
    assert any(UNKNOWN in json.dumps(r["inputs"]) for r in resources)
    # The one finding is the normal render's too: ml-training's GPU pool is deliberately uncapped
    # (p4d/p5 for 4-GPU jobs), an advisory. Nothing IAM-related is left for preview to miss.
    report = json.loads((out / "policy-report.json").read_text())
    assert [(f["policy"], f["level"]) for f in report] == [("nodepool-size-capped", "advisory")]
    assert (out / "iam" / "karpenter-aws-controller-iam-integration.json").is_file()
