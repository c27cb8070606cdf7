"""Capacity-type and tenancy values, exactly as Karpenter v1.14.1 judges them.

Upstream: kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/nodeclaim_validation.go
`validateWellKnownValues` (called by ValidateRequirement for NodePool and NodeClaim requirements):
it returns nil unless the operator is `In`; under `In` it fails when no value is in
`WellKnownValuesForRequirements[key]` (pkg/apis/v1/labels.go: on-demand, spot, reserved), or when
fewer known values than `minValues` remain, and it only logs unknown values beside a known one.
aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go adds instance-tenancy (default,
dedicated); its pkg/apis/v1/nodepool_validation_cel_test.go "should fail validation with only
invalid capacity types", "should fail open if invalid and valid capacity types are present" and the
same two for tenancy are the cases below.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.config.nodepools import Requirement

CAPACITY, TENANCY = "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-tenancy"


def _problem(**requirement) -> str | None:
    try:
        Requirement.model_validate(requirement)
    except ValidationError as err:
        return str(err)
    return None


@pytest.mark.parametrize("key,unknown,known", [(CAPACITY, "xspot", "on-demand"), (TENANCY, "xdedicated", "default")])
def test_in_with_only_unknown_values_is_refused_and_with_one_known_value_fails_open(key, unknown, known):
    assert f"'{unknown}' not valid for {key}" in _problem(key=key, operator="In", values=[unknown])
    assert _problem(key=key, operator="In", values=[known]) is None
    assert _problem(key=key, operator="In", values=[known, unknown]) is None  # Karpenter logs, goes on


def test_min_values_counts_only_the_values_karpenter_knows():
    problem = _problem(key=CAPACITY, operator="In", values=["on-demand", "ondemand"], minValues=2)
    assert "minValues 2 needs as many values Karpenter knows" in problem
    assert _problem(key=CAPACITY, operator="In", values=["on-demand", "spot", "x"], minValues=2) is None


@pytest.mark.parametrize("key", [CAPACITY, TENANCY])
@pytest.mark.parametrize("operator,values", [
    ("NotIn", ["ondemand"]), ("Gt", ["5"]), ("Gte", ["5"]), ("Lt", ["5"]), ("Lte", ["5"]), ("Exists", []),
    ("DoesNotExist", []),
])
def test_operators_other_than_in_take_any_value_on_these_keys(key, operator, values):
    """validateWellKnownValues returns nil for every operator but In, so `Gt 5` on the capacity
    type passes Karpenter's validation (it then matches no offering); only the operator's own
    rules apply (one non-negative integer for Gt/Gte/Lt/Lte, none for Exists/DoesNotExist)."""
    assert _problem(key=key, operator=operator, values=values) is None
