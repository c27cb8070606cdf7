"""Quantities (k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity): one grammar, the
Decimal view the config and policies use, the milli view the scheduling core uses."""
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubefacts import quantity


@pytest.mark.parametrize("text, base, milli", [
    ("500m", Decimal("0.5"), 500), ("4", Decimal(4), 4000), ("16Gi", Decimal(16 * 2**30), 16 * 2**30 * 1000),
    ("1.5Ki", Decimal(1536), 1536000), ("1e3", Decimal(1000), 10**6), ("1n", Decimal("1e-9"), 1), (100, Decimal(100), 10**5),
])
def test_both_views_read_one_grammar(text, base, milli):
    assert quantity.decimal(text) == base
    assert quantity.milli(text) == milli


@pytest.mark.parametrize("text", ["40GB", "two", "", "1.2.3", "Gi", "1 Gi", "1e", "0x10", "\uff11", True, None, [], "1" * 101])
def test_both_views_refuse_the_same_text_in_the_same_words(text):
    with pytest.raises(ValueError, match="is not a Kubernetes quantity") as decimal_error:
        quantity.decimal(text)
    with pytest.raises(ValueError, match="is not a Kubernetes quantity") as milli_error:
        quantity.milli(text)
    assert str(decimal_error.value) == str(milli_error.value)


def test_exponent_is_bounded_before_arithmetic():
    for view in (quantity.decimal, quantity.milli):
        with pytest.raises(ValueError, match="out of range"):
            view("1e99999999")


def test_each_view_keeps_its_bound():
    with pytest.raises(ValueError, match="2\\^63"):
        quantity.decimal("8Ei")
    assert quantity.milli("8Ei") == 8 * 2**60 * 1000  # NodePool limits may exceed int64 base units
    with pytest.raises(ValueError, match="too large"):
        quantity.milli("1e25")


@given(st.integers(0, 10**9), st.sampled_from(["", "m", "k", "Mi", "Gi", "M"]))
def test_views_agree_on_whole_amounts(n, suffix):
    assert quantity.milli(f"{n}{suffix}") == int(quantity.decimal(f"{n}{suffix}") * 1000)
