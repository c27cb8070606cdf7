"""Every shipped stack, rendered offline, passes the pack with no mandatory violation."""

import pytest

from policies.check import resource_from_render
from policies.engine import evaluate
from policies.model import Stack
from tests.harness import STACKS, render


def stack_of(name: str) -> Stack:
    capture = render(name)
    return Stack(capture.outputs.get("environment"), tuple(resource_from_render(r.to_json()) for r in capture.resources))


@pytest.mark.parametrize("name", STACKS)
@pytest.mark.slow
def test_shipped_stack_has_no_mandatory_violation(name):
    stack = stack_of(name)
    assert stack.environment == name
    mandatory = [f"{f.policy}: {f.message}" for f in evaluate(stack) if f.level == "mandatory"]
    assert mandatory == []


@pytest.mark.parametrize("name", STACKS)
def test_shipped_stack_runs_every_policy_without_internal_error(name):
    crashed = [f.message for f in evaluate(stack_of(name), {"all": "advisory"}) if "could not run" in f.message]
    assert crashed == []


def _annotated(name: str) -> Stack:
    """The shipped stack with the team facts the NodePools are asked to carry (see docs/policies.md,
    coordination): karpenter-platform.io/allow-spot and karpenter-platform.io/largest-pod."""
    import dataclasses
    import json

    from tests.harness import stack_platform

    facts = {f"{t.name}-{p.name}": (t.allow_spot, p.largest_pod) for t in stack_platform(name).teams for p in t.node_pools}
    stack = stack_of(name)
    resources = []
    for resource in stack.resources:
        pool_name = resource.prop("metadata", "name")
        if resource.type == "kubernetes:karpenter.sh/v1:NodePool" and pool_name in facts:
            allow_spot, largest = facts[pool_name]
            props = json.loads(json.dumps(resource.props))
            annotations = props["metadata"].setdefault("annotations", {})
            annotations["karpenter-platform.io/allow-spot"] = str(allow_spot).lower()
            if largest:
                annotations["karpenter-platform.io/largest-pod"] = json.dumps(largest)
            resource = dataclasses.replace(resource, props=props)
        resources.append(resource)
    return Stack(stack.environment, tuple(resources))


@pytest.mark.parametrize("name", STACKS)
def test_shipped_team_facts_pass_spot_and_largest_pod_policies(name):
    from policies.pack import BY_NAME

    stack = _annotated(name)
    annotated = [r for r in stack.resources if r.prop("metadata", "annotations", "karpenter-platform.io/largest-pod")]
    assert annotated, "the shipped teams declare largestPod on some pools"
    policies = [BY_NAME["nodepool-spot-allowed"], BY_NAME["nodepool-fits-largest-pod"]]
    assert [f.message for f in evaluate(stack, policies=policies)] == []


def test_shipped_ml_team_spot_would_be_refused():
    import dataclasses

    from policies.pack import BY_NAME

    stack = _annotated("prod")
    resources = []
    for resource in stack.resources:
        if resource.prop("metadata", "name") == "ml-training-gpu":
            props = dict(resource.props)
            spec = dict(props["spec"])
            template = dict(spec["template"])
            tspec = dict(template["spec"])
            tspec["requirements"] = [r for r in tspec["requirements"] if r["key"] != "karpenter.sh/capacity-type"] + [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]
            template["spec"], spec["template"], props["spec"] = tspec, template, spec
            resource = dataclasses.replace(resource, props=props)
        resources.append(resource)
    findings = evaluate(Stack("prod", tuple(resources)), policies=[BY_NAME["nodepool-spot-allowed"]])
    assert [(f.level, f.label) for f in findings] == [("mandatory", "NodePool ml-training-gpu")]
