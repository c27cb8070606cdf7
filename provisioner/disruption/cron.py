"""When a scheduled disruption budget is active (pkg/apis/v1/nodepool.go Budget.IsActive): the
budget's standard cron `schedule` (UTC, robfig/cron's ParseStandard) last fired no longer ago than
its `duration`."""
from __future__ import annotations

from datetime import datetime, timedelta

from kubefacts import cron
from kubefacts.errors import Refusal


class CronError(Refusal, ValueError):
    """A schedule robfig/cron's ParseStandard refuses."""


class Schedule:
    """A budget schedule (kubefacts.cron parses it) and when it fires."""

    def __init__(self, text: str):
        try:
            parsed = cron.parse(text)
        except ValueError as err:
            raise CronError(str(err)) from None
        self.minutes, self.hours, self.months = parsed.minutes, parsed.hours, parsed.months
        self.dom, self.dow = parsed.days_of_month, parsed.days_of_week
        self.dom_star, self.dow_star = parsed.dom_star, parsed.dow_star

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
