"""Standard cron schedules as robfig/cron v3's ParseStandard reads them (what Karpenter parses a
disruption budget's `schedule` with, pkg/apis/v1/nodepool.go): five fields (minute, hour, day of
month, month, day of week) of `*`/`?`, `a`, `a-b`, each with an optional `/step`, comma-separated,
month and day names, or one of the descriptors (@yearly ... @hourly). Numbers are ASCII digits
(strconv.Atoi). One parser for the config's check and the provisioner's Budget.IsActive."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import re2

DESCRIPTORS: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_NO_NAMES: Mapping[str, int] = {}
# (name, min, max, names) per field of ParseStandard.
_FIELDS: tuple[tuple[str, int, int, Mapping[str, int]], ...] = (
    ("minute", 0, 59, _NO_NAMES), ("hour", 0, 23, _NO_NAMES), ("day of month", 1, 31, _NO_NAMES),
    ("month", 1, 12, _MONTHS), ("day of week", 0, 6, _DAYS))


@dataclass(frozen=True)
class Schedule:
    """The minutes, hours, days of month, months and days of week (0 = Sunday) a schedule fires
    at; a day field written `*`/`?` is a star (robfig: then the other day field alone decides)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_star: bool
    dow_star: bool


def _number(text: str, names: Mapping[str, int], field: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re2.fullmatch(r"[0-9]{1,9}", text):
        raise ValueError(f"{field}: {text!r} is not a number{' or a name' if names else ''}")
    return int(text)


def _field(text: str, field: str, low: int, high: int, names: Mapping[str, int]) -> tuple[frozenset[int], bool]:
    """getRange of robfig/cron, for each comma-separated part: the values, and whether robfig sets
    the field's star bit (a `*`/`?` part with no step above 1: `*/2` is no star, `*/1` is)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        range_part, slash, step_text = part.partition("/")
        if slash and (not step_text or "/" in step_text):
            raise ValueError(f"{field}: {part!r} has a malformed step")
        if range_part in ("*", "?"):
            start, end = low, high
        else:
            start_text, dash, end_text = range_part.partition("-")
            start = _number(start_text, names, field)
            end = _number(end_text, names, field) if dash else (high if slash else start)
        step = 1
        if slash:
            step = _number(step_text, _NO_NAMES, field)
            if step <= 0:
                raise ValueError(f"{field}: step of {part!r} must be a positive number")
        if start < low or end > high:
            raise ValueError(f"{field}: {part!r} is outside {low}-{high}")
        if start > end:
            raise ValueError(f"{field}: {part!r} starts after it ends")
        star = star or (range_part in ("*", "?") and step <= 1)
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def parse(schedule: str) -> Schedule:
    """The schedule, or ValueError with the reason ParseStandard refuses it."""
    if schedule.startswith("@"):
        if schedule not in DESCRIPTORS:
            raise ValueError(f"{schedule!r} is not a schedule descriptor ({', '.join(sorted(DESCRIPTORS))})")
        return parse(DESCRIPTORS[schedule])
    fields = schedule.split()
    if len(fields) != 5 or schedule != schedule.strip():
        raise ValueError(f"{schedule!r} is not a cron schedule: 5 fields (minute hour day-of-month month day-of-week) "
                         "expected")
    try:
        (minutes, _), (hours, _), (dom, dom_star), (months, _), (dow, dow_star) = (
            _field(text, *spec) for text, spec in zip(fields, _FIELDS, strict=True))
    except ValueError as err:
        raise ValueError(f"{schedule!r} is not a cron schedule Karpenter can parse: {err}") from None
    return Schedule(minutes, hours, dom, months, dow, dom_star, dow_star)


def problem(schedule: str) -> str | None:
    """Why ParseStandard refuses `schedule`, or None."""
    try:
        parse(schedule)
    except ValueError as err:
        return str(err)
    return None


# The most days each month has (29 for February: a leap year's).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def never_fires(schedule: Schedule) -> bool:
    """robfig's dayMatches needs both day fields when either is a star: with day-of-week `*`, a day
    of the month that no named month has never matches, so Next returns the zero time (after its
    five-year search) and Karpenter's Budget.IsActive holds such a budget active forever."""
    return schedule.dow_star and not schedule.dom_star and not any(
        d <= _MONTH_DAYS[m - 1] for m in schedule.months for d in schedule.days_of_month)


def config_problem(text: str) -> str | None:
    """Why a budget schedule is refused in config: ParseStandard refuses it, or it never fires
    (Karpenter accepts that one, and would keep the budget active all the time)."""
    try:
        schedule = parse(text)
    except ValueError as err:
        return str(err)
    if never_fires(schedule):
        days = ", ".join(map(str, sorted(schedule.days_of_month)))
        return f"{text!r} never fires (no month it names has day {days}); Karpenter would keep this budget active all the time"
    return None


__all__ = ["DESCRIPTORS", "Schedule", "config_problem", "never_fires", "parse", "problem"]
