"""robfig/cron's standard parser (`cron.ParseStandard`), which Karpenter uses for disruption budget
schedules (pkg/apis/v1/nodepool.go, Budget.IsActive; nodepool_validation.go): why a schedule is
refused. Moved from components/config/karpenter_rules.py (which re-exports it)."""

from __future__ import annotations

import re2

_CRON_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, min, max, names) per field of ParseStandard: minute, hour, day of month, month, day of week.
_CRON_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
                ("month", 1, 12, _MONTHS), ("day of week", 0, 6, _DAYS))


def _cron_number(text: str, names: dict[str, int], field: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re2.fullmatch(r"[0-9]{1,9}", text):
        raise ValueError(f"{field}: {text!r} is not a number{' or a name' if names else ''}")
    return int(text)


def _cron_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> None:
    """getRange of robfig/cron: `*`/`?`, `a`, `a-b`, each with an optional `/step`, comma-separated."""
    for part in text.split(","):
        range_part, slash, step_text = part.partition("/")
        if slash and (not step_text or "/" in step_text):
            raise ValueError(f"{field}: {part!r} has a malformed step")
        if range_part in ("*", "?"):
            start, end = low, high
        else:
            start_text, dash, end_text = range_part.partition("-")
            start = _cron_number(start_text, names, field)
            end = _cron_number(end_text, names, field) if dash else (high if slash else start)
        if slash:
            step = _cron_number(step_text, {}, field)
            if step <= 0:
                raise ValueError(f"{field}: step of {part!r} must be a positive number")
        if start < low or end > high:
            raise ValueError(f"{field}: {part!r} is outside {low}-{high}")
        if start > end:
            raise ValueError(f"{field}: {part!r} starts after it ends")


def cron_problem(schedule: str) -> str | None:
    """Why robfig/cron's ParseStandard (what Karpenter uses for budget schedules) refuses it."""
    if schedule.startswith("@"):
        return None if schedule in _CRON_DESCRIPTORS else (
            f"{schedule!r} is not a schedule descriptor ({', '.join(sorted(_CRON_DESCRIPTORS))})")
    fields = schedule.split()
    if len(fields) != 5 or schedule != schedule.strip():
        return f"{schedule!r} is not a cron schedule: 5 fields (minute hour day-of-month month day-of-week) expected"
    for text, (field, low, high, names) in zip(fields, _CRON_FIELDS):
        try:
            _cron_field(text, field, low, high, names)
        except ValueError as err:
            return f"{schedule!r} is not a cron schedule Karpenter can parse: {err}"
    return None


__all__ = ["cron_problem"]
