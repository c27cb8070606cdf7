"""Scheduled disruption budgets as Karpenter reads them: robfig/cron v3 SpecSchedule.Next (spec.go,
five years searched, the zero time otherwise) and Budget.IsActive (kubernetes-sigs/karpenter
v1.14.1 pkg/apis/v1/nodepool.go: active when Next(now - duration) is not after now)."""
from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.disruption.cron import Schedule, is_active
from tests.provisioner.disruption_builders import acted, knode, pool, run, why

LONGEST_BUDGET_DURATION = 2562047 * 3600  # the most hours time.ParseDuration reads into an int64


def test_never_firing_zero_budget_blocks_all_disruption():
    """`0 0 31 2 *` never fires: robfig's Next returns the zero time, which is not after now, so
    IsActive is true and `nodes: "0"` blocks every disruption (the old reading planned a delete)."""
    pools = [pool(budgets=[{"nodes": "100%"}, {"nodes": "0", "schedule": "0 0 31 2 *", "duration": "1h"}])]
    result = run(knode("e"), pools=pools, now=datetime(2026, 11, 23, 9, 0))
    assert acted(result) == []
    assert "never fires, so Karpenter keeps the budget always active" in why(result)["e"]


def test_never_firing_schedule_at_the_longest_duration_is_active():
    """The case that walked 153 million minutes: now answered by stepping months and days."""
    assert is_active("0 0 31 2 *", LONGEST_BUDGET_DURATION, datetime(2026, 11, 27)) is True
    assert is_active("0 0 30 2 *", 3600, datetime(2026, 11, 27)) is True


def test_next_gives_up_after_five_years_as_robfig_does():
    """From March 2097 the next 29 February is in 2104 (2100 is no leap year): beyond robfig's
    five years, so the zero time, and a budget with that schedule is active."""
    assert Schedule("0 0 29 2 *").next(datetime(2097, 3, 1)) is None
    assert Schedule("0 0 29 2 *").next(datetime(2026, 3, 1)) == datetime(2028, 2, 29)
    assert is_active("0 0 29 2 *", 3600, datetime(2097, 3, 1)) is True
    assert is_active("0 0 29 2 *", 3600, datetime(2027, 3, 1)) is False


def test_next_is_strictly_after_and_rounds_up_to_the_minute():
    s = Schedule("0 8 * * *")
    assert s.next(datetime(2026, 1, 1, 8, 0)) == datetime(2026, 1, 2, 8, 0)
    assert s.next(datetime(2026, 1, 1, 7, 59, 59, 500000)) == datetime(2026, 1, 1, 8, 0)
    # Next is strictly after (now - duration): a firing exactly `duration` ago no longer counts
    assert is_active("0 8 * * *", 3600, datetime(2026, 1, 1, 8, 59, 59)) is True
    assert is_active("0 8 * * *", 3600, datetime(2026, 1, 1, 9, 0)) is False


def test_star_with_a_step_is_no_star_for_the_day_rule():
    """robfig getRange clears the star bit for `*/2`: both day fields restricted, so either matches."""
    s = Schedule("0 0 */2 * 1")
    assert s.matches(datetime(2026, 11, 2)) and s.matches(datetime(2026, 11, 3))  # a Monday; day 3
    assert not s.matches(datetime(2026, 11, 4))
    assert Schedule("0 0 */1 * 1").matches(datetime(2026, 11, 2)) and not Schedule("0 0 */1 * 1").matches(
        datetime(2026, 11, 3))  # `*/1` keeps the star: both must match


def _brute_next(s: Schedule, t: datetime, minutes: int) -> datetime | None:
    x = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(minutes):
        if s.matches(x):
            return x
        x += timedelta(minutes=1)
    return None


_fields = st.tuples(
    st.sampled_from(["*", "0", "*/15", "5,35", "59"]), st.sampled_from(["*", "0", "9-17", "23", "*/6"]),
    st.sampled_from(["*", "1", "15", "29", "31", "*/10", "?"]), st.sampled_from(["*", "2", "1,7", "dec"]),
    st.sampled_from(["*", "mon-fri", "0", "6", "*/3"]))


@settings(max_examples=150, deadline=None)
@given(_fields, st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)))
def test_next_is_the_first_matching_minute_after(fields, t):
    s = Schedule(" ".join(fields))
    brute = _brute_next(s, t, 3 * 24 * 60)
    found = s.next(t)
    if brute is not None:
        assert found == brute
    else:
        assert found is None or found > t + timedelta(days=3)
        if found is not None:
            assert s.matches(found)


def test_times_at_the_ends_of_the_calendar_answer_without_error():
    """`--at 9999-12-31T23:59` or a duration reaching before year 1: Go's time holds both, datetime
    does not; a firing past year 9999 is later than any now, a never-firing schedule stays None."""
    assert is_active("0 0 1 1 *", 3600, datetime(9999, 12, 31, 23, 59)) is False
    assert is_active("0 0 31 2 *", 3600, datetime(9999, 12, 31, 23, 59)) is True
    assert is_active("0 0 * * *", LONGEST_BUDGET_DURATION, datetime(1, 1, 2)) is True
    assert Schedule("59 23 31 12 *").next(datetime(9999, 12, 31, 23, 59, 30)) == datetime.max
