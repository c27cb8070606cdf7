"""Property tests (hypothesis) for the rules that are general: the requirement algebra, quantity
parsing and topology spread counting. Upstream: sigs.k8s.io/karpenter pkg/scheduling/requirement.go
(Intersection, HasIntersection; requirement_test.go), k8s.io/apimachinery resource.ParseQuantity,
pkg/controllers/provisioning/scheduling/topology_test.go (ExpectSkew)."""
from __future__ import annotations

import pytest
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from kubefacts import quantity
from provisioner.scheduling.requirements import Requirement

KEY = "example.com/size"
VALUES = [str(i) for i in range(-2, 13)] + ["a", "b", "c"]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]


@st.composite
def requirements(draw):
    operator = draw(st.sampled_from(OPERATORS))
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        values = [str(draw(st.integers(0, 10)))]
    elif operator in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=operator == "In", max_size=5))
    else:
        values = []
    return Requirement.of(KEY, operator, values)


def _allowed(requirement: Requirement) -> set:
    return {v for v in VALUES if requirement.has(v)}


@settings(max_examples=300, deadline=None)
@given(requirements(), requirements())
@pytest.mark.slow
def test_intersection_allows_exactly_the_values_both_allow(a, b):
    assert _allowed(a.intersection(b)) == _allowed(a) & _allowed(b)
    assert _allowed(a.intersection(b)) == _allowed(b.intersection(a))


@settings(max_examples=300, deadline=None)
@given(requirements(), requirements())
@pytest.mark.slow
def test_has_intersection_agrees_with_the_values_both_allow(a, b):
    """Two complements (NotIn/Exists/Gt/Lt...) always intersect unless their bounds contradict
    (Karpenter's HasIntersection); otherwise a common value must exist."""
    assert a.has_intersection(b) == b.has_intersection(a)
    if a.complement and b.complement:
        gte = max((x for x in (a.gte, b.gte) if x is not None), default=None)
        lte = min((x for x in (a.lte, b.lte) if x is not None), default=None)
        assert a.has_intersection(b) == (gte is None or lte is None or gte <= lte)
    else:
        assert a.has_intersection(b) == bool(_allowed(a) & _allowed(b))


@given(st.integers(0, 20), st.integers(0, 20))
def test_contradictory_gt_and_lt_never_intersect(low, high):
    gt, lt = Requirement.of(KEY, "Gt", [str(low)]), Requirement.of(KEY, "Lt", [str(high)])
    assert gt.has_intersection(lt) == (high - low >= 2)
    assert bool(_allowed(gt.intersection(lt)) - {"a", "b", "c"}) == (high - low >= 2 and low + 1 <= 12 and high - 1 >= -2)


@given(st.integers(0, 20), st.integers(-5, 25))
def test_gte_and_lte_bounds_are_inclusive(bound, value):
    assert Requirement.of(KEY, "Gte", [str(bound)]).has(str(value)) == (value >= bound)
    assert Requirement.of(KEY, "Lte", [str(bound)]).has(str(value)) == (value <= bound)
    assert Requirement.of(KEY, "Gt", [str(bound)]).has(str(value)) == (value > bound)
    assert Requirement.of(KEY, "Lt", [str(bound)]).has(str(value)) == (value < bound)


# --- quantities ---------------------------------------------------------------------------------

@given(st.integers(0, 10**15))
def test_integer_text_is_thousand_milli_units(n):
    assert quantity.milli(str(n)) == n * 1000 == quantity.milli(n)


@given(st.integers(0, 10**17))
def test_milli_suffix_is_exact(n):
    assert quantity.milli(f"{n}m") == n


@given(st.sampled_from(["cpu", "memory", "ephemeral-storage", "pods"]), st.integers(1, 10**12))
def test_format_then_parse_round_trips(name, milli):
    assert quantity.milli(quantity.format_quantity(name, milli)) == milli


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_parse_is_monotonic(a, b):
    assert (quantity.milli(f"{a}Mi") <= quantity.milli(f"{b}Mi")) == (a <= b)


@given(st.decimals(min_value=0, max_value=10**9, places=3, allow_nan=False, allow_infinity=False))
def test_decimal_text_rounds_up_to_milli(value):
    assert quantity.milli(str(value)) == -(-Fraction(str(value)) * 1000 // 1)


@settings(max_examples=300)
@given(st.text(max_size=40) | st.from_regex(r"[+-]?[0-9]{1,5}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,9}|[KMGTPE]i|[numkMGTPE])?",
                                            fullmatch=True))
@pytest.mark.slow
def test_any_text_parses_or_raises_value_error_quickly(text):
    try:
        result = quantity.milli(text)
    except ValueError:
        return
    assert abs(result) <= quantity.MAX_MILLI


# --- topology spread ----------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(st.integers(1, 24), st.integers(1, 3))
def test_zone_spread_keeps_skew_within_max_skew(replicas, max_skew):
    from tests.provisioner.scheduling.test_topology import ZONE, core, skew, spread, spread_pods

    result = core(spread_pods(replicas, spread(ZONE, max_skew=max_skew)))
    counts = skew(result, ZONE)
    assert sum(counts) == replicas
    # Every zone the NodePool offers counts, including empty ones.
    per_zone = counts + [0] * (3 - len(counts))
    assert max(per_zone) - min(per_zone) <= max_skew
