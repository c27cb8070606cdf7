"""When a scheduled disruption budget is active (pkg/apis/v1/nodepool.go Budget.IsActive): the
budget's standard cron `schedule` (UTC, robfig/cron's ParseStandard) last fired no longer ago than
its `duration`."""
from __future__ import annotations

from datetime import datetime, timedelta
from kubefacts.errors import Refusal

_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_BOUNDS = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))


class CronError(Refusal, ValueError):
    """A schedule robfig/cron's ParseStandard refuses."""


def _value(text: str, names: dict) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise CronError(f"invalid value {text!r}")
    return int(text)


def _field(text: str, low: int, high: int, names: dict) -> tuple[frozenset, bool]:
    """(allowed values, whether the field is a star)."""
    values: set = set()
    star = text in ("*", "?")
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step_text and (not step_text.isdigit() or step < 1):
            raise CronError(f"invalid step in {part!r}")
        if rng in ("*", "?"):
            start, end = low, high
        elif "-" in rng:
            a, b = rng.split("-", 1)
            start, end = _value(a, names), _value(b, names)
        else:
            start = _value(rng, names)
            end = high if step_text else start
        if not low <= start <= end <= high:
            raise CronError(f"{part!r} is out of range {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values), star


class Schedule:
    def __init__(self, text: str):
        spec = _DESCRIPTORS.get(text.strip(), text.strip())
        fields = spec.split()
        if len(fields) != 5:
            raise CronError(f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}")
        parsed = [_field(f, lo, hi, names) for f, (lo, hi, names) in zip(fields, _BOUNDS)]
        (self.minutes, _), (self.hours, _), (self.dom, self.dom_star), (self.months, _), (self.dow, self.dow_star) = parsed

    def matches(self, t: datetime) -> bool:
        if t.minute not in self.minutes or t.hour not in self.hours or t.month not in self.months:
            return False
        dom, dow = t.day in self.dom, (t.weekday() + 1) % 7 in self.dow
        return (dom and dow) if (self.dom_star or self.dow_star) else (dom or dow)

    def next_after(self, t: datetime, limit: datetime) -> datetime | None:
        """The first minute strictly after `t` that fires, if any until `limit`."""
        t = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        while t <= limit:
            if self.matches(t):
                return t
            t += timedelta(minutes=1)
        return None


def is_active(schedule: str, duration_seconds: float, now: datetime) -> bool:
    """Budget.IsActive: the next firing after (now - duration) is not after now."""
    return Schedule(schedule).next_after(now - timedelta(seconds=duration_seconds), now) is not None
