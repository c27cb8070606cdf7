"""A value not known yet (pulumi preview, before a resource exists) is never a violation: making
any value of a shipped stack unknown can only remove violations, never add one."""

import copy
from collections import Counter

import pytest

from tests.harness import render
from tests.policies.analyzer import UNKNOWN, from_render, run_all


def _shipped(name):
    capture = render(name)
    return [from_render(r.to_json()) for r in capture.resources], capture.outputs["environment"]


def _paths(props):
    """Top-level keys, and the keys one level into the objects policies read."""
    for key, value in props.items():
        yield (key,)
        if isinstance(value, dict):
            for sub, inner in value.items():
                yield (key, sub)
                if key == "spec" and sub == "template" and isinstance(inner, dict):
                    for part in ("metadata", "spec"):
                        for leaf in (inner.get(part) or {}):
                            yield (key, sub, part, leaf)
                if key == "values" and isinstance(inner, dict):
                    for leaf in inner:
                        yield (key, sub, leaf)


def _with_unknown(resources, index, path):
    variant = copy.deepcopy(resources)
    target = variant[index]["props"]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = UNKNOWN
    return variant


def _per_resource(found):
    """Violations counted per (policy, resource): a message may read differently once a name is unknown."""
    return Counter((policy, urn) for policy, urn, _ in found)


@pytest.mark.parametrize("name", ["dev", "prod"])
@pytest.mark.slow
def test_unknown_values_never_add_violations(name):
    resources, environment = _shipped(name)
    baseline = _per_resource(run_all(resources, environment))
    checked = 0
    for index, resource in enumerate(resources):
        for path in _paths(resource["props"]):
            found = run_all(_with_unknown(resources, index, path), environment)
            added = _per_resource(found) - baseline
            assert not added, f"{resource['name']}.{'.'.join(path)} unknown -> {sorted(found)}"
            checked += 1
    assert checked > 100


def test_unknown_everything_reports_nothing():
    resources, environment = _shipped("dev")
    for resource in resources:
        resource["props"] = dict.fromkeys(resource["props"], UNKNOWN)
    assert run_all(resources, environment) == set()
