"""The mock monitor's capture: the order of the declared resources does not depend on the run."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offline.monitor import Declared, stable_order
from tests.harness import render


@pytest.fixture(scope="module")
def dev() -> list[Declared]:
    return render("dev").resources


def _declared(urn: str, parent: str | None = None, depends_on: tuple[str, ...] = ()) -> Declared:
    return Declared(type="t", name=urn, urn=urn, parent=parent, custom=True, inputs={},
                    options={"dependsOn": list(depends_on)})


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_stable_order_is_the_same_whatever_order_the_resources_arrived_in(dev, data):
    arrived = data.draw(st.permutations(dev))
    assert [r.urn for r in stable_order(list(arrived))] == [r.urn for r in dev]


def test_stable_order_puts_each_resource_after_its_parent_dependencies_and_provider(dev):
    ordered = stable_order(list(reversed(dev)))
    position = {r.urn: i for i, r in enumerate(ordered)}
    for i, resource in enumerate(ordered):
        before = [resource.parent, *resource.options.get("dependsOn", ())]
        if resource.options.get("provider"):
            before.append(resource.options["provider"].rsplit("::", 1)[0])
        assert all(position[urn] < i for urn in before if urn in position), resource.urn


def test_stable_order_ranks_resources_ready_together_by_urn():
    resources = [_declared("c", parent="a"), _declared("b"), _declared("a", depends_on=("b",)), _declared("a0")]
    assert [r.urn for r in stable_order(resources)] == ["a0", "b", "a", "c"]


def test_stable_order_keeps_every_resource_of_a_dependency_cycle():
    resources = [_declared("b", depends_on=("a",)), _declared("a", depends_on=("b",)), _declared("c", parent="b")]
    assert [r.urn for r in stable_order(resources)] == ["a", "b", "c"]
