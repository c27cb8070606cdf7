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
def test_shipped_stack_has_no_mandatory_violation(name):
    stack = stack_of(name)
    assert stack.environment == name
    mandatory = [f"{f.policy}: {f.message}" for f in evaluate(stack) if f.level == "mandatory"]
    assert mandatory == []


@pytest.mark.parametrize("name", STACKS)
def test_shipped_stack_runs_every_policy_without_internal_error(name):
    crashed = [f.message for f in evaluate(stack_of(name), {"all": "advisory"}) if "could not run" in f.message]
    assert crashed == []
