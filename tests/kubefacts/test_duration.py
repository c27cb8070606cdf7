"""Durations: Go's time.ParseDuration (src/time/format.go) and Karpenter's CRD grammars
(karpenter.sh_nodepools.yaml v1.14.1; NillableDuration, pkg/apis/v1/duration.go)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubefacts import duration

H, M, S = 3600 * 10**9, 60 * 10**9, 10**9


@pytest.mark.parametrize("text, nanoseconds", [
    ("30m1h", 90 * M), ("1h30m", 90 * M), ("0", 0), ("-1.5h", -90 * M), ("+5s", 5 * S), (".5s", S // 2),
    ("1.s", S), ("1\u00b5s", 1000), ("1\u03bcs", 1000), ("100ms", 10**8), ("1h1h", 2 * H),
    ("2562047h47m16.854775807s", 2**63 - 1),
])
def test_go_duration_accepts_what_parse_duration_accepts(text, nanoseconds):
    assert duration.go_nanoseconds(text) == nanoseconds


@pytest.mark.parametrize("text, reason", [
    ("", "invalid duration"), (".s", "invalid duration"), ("1", "missing unit"), ("1d", "unknown unit"),
    ("Never", "invalid duration"), ("2562047h47m16.854775808s", "int64"), ("9999999999999999999h", "int64"),
    ("h", "invalid duration"), ("1h 30m", "unknown unit"),
])
def test_go_duration_refuses_what_parse_duration_refuses(text, reason):
    with pytest.raises(ValueError, match=reason):
        duration.go_nanoseconds(text)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["h", "m", "s", "ms"])), min_size=1, max_size=4))
def test_go_duration_is_the_sum_of_its_terms_in_any_order(terms):
    text = "".join(f"{n}{u}" for n, u in terms)
    unit = {"h": H, "m": M, "s": S, "ms": 10**6}
    total = sum(n * unit[u] for n, u in terms)
    if total > duration.INT64_MAX:  # time.ParseDuration's int64 nanoseconds: refused, in either order
        for written in (text, "".join(f"{n}{u}" for n, u in reversed(terms))):
            with pytest.raises(ValueError, match="int64"):
                duration.go_nanoseconds(written)
        return
    assert duration.go_nanoseconds(text) == total
    assert duration.go_nanoseconds("".join(f"{n}{u}" for n, u in reversed(terms))) == duration.go_nanoseconds(text)


@pytest.mark.parametrize("text, seconds", [("30m1h", 5400), ("720h", 2592000), ("Never", None), ("10s", 10)])
def test_karpenter_duration_takes_the_crd_pattern_then_parse_duration(text, seconds):
    assert duration.karpenter_problem(text) is None
    assert duration.karpenter_seconds(text) == seconds


@pytest.mark.parametrize("text", ["1.5h", "90", "", "never", "1d", "-1h", "99999999999h"])
def test_karpenter_duration_refuses_outside_the_crd_pattern_or_int64(text):
    assert duration.karpenter_problem(text) is not None
    with pytest.raises(ValueError):
        duration.karpenter_seconds(text)


@pytest.mark.parametrize("text, ok", [("8h", True), ("30m", True), ("1h30m", True), ("1h30m0s", True),
                                      ("10s", False), ("1h30m5s", False), ("Never", False)])
def test_budget_duration_takes_hours_and_minutes_only(text, ok):
    assert (duration.budget_problem(text) is None) is ok
