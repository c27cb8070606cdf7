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


def _field(text: str, field: str, low: int, high: int, names: Mapping[str, int]) -> frozenset[int]:
    """getRange of robfig/cron, for each comma-separated part."""
    values: set[int] = set()
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
        values.update(range(start, end + 1, step))
    return frozenset(values)


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
        minutes, hours, dom, months, dow = (_field(text, *spec) for text, spec in zip(fields, _FIELDS, strict=True))
    except ValueError as err:
        raise ValueError(f"{schedule!r} is not a cron schedule Karpenter can parse: {err}") from None
    return Schedule(minutes, hours, dom, months, dow, fields[2] in ("*", "?"), fields[4] in ("*", "?"))


def problem(schedule: str) -> str | None:
    """Why ParseStandard refuses `schedule`, or None."""
    try:
        parse(schedule)
    except ValueError as err:
        return str(err)
    return None


__all__ = ["DESCRIPTORS", "Schedule", "parse", "problem"]
