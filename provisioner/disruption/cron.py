"""When a scheduled disruption budget is active (pkg/apis/v1/nodepool.go Budget.IsActive): the
budget's standard cron `schedule` (UTC, robfig/cron v3's ParseStandard) last fired no longer ago
than its `duration`.

`Schedule.next` mirrors robfig/cron's SpecSchedule.Next (spec.go): the first firing strictly
after `t`, searched no further than the end of the fifth year after `t`, with None for robfig's
zero time. It steps over months and days, never minutes, so a schedule that never fires
(`0 0 31 2 *`) costs a few thousand steps whatever the budget's duration.
"""
from __future__ import annotations

import calendar
from datetime import MAXYEAR, datetime, timedelta, timezone

from kubefacts import cron
from kubefacts.errors import Refusal

YEARS_SEARCHED = 5  # robfig/cron Next: "If no time is found within five years, return zero."


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
        self._never = cron.never_fires(parsed)
        self._sorted_minutes, self._sorted_hours = sorted(self.minutes), sorted(self.hours)

    def day_matches(self, year: int, month: int, day: int) -> bool:
        """robfig's dayMatches: both day fields when either is a star, else either."""
        dom, dow = day in self.dom, (calendar.weekday(year, month, day) + 1) % 7 in self.dow
        return (dom and dow) if (self.dom_star or self.dow_star) else (dom or dow)

    def matches(self, t: datetime) -> bool:
        if t.minute not in self.minutes or t.hour not in self.hours or t.month not in self.months:
            return False
        return self.day_matches(t.year, t.month, t.day)

    def _first_time(self, hour: int, minute: int) -> tuple[int, int] | None:
        """The first (hour, minute) of the schedule at or after hour:minute of one day."""
        for h in self._sorted_hours:
            if h > hour:
                return h, self._sorted_minutes[0]
            if h == hour:
                later = [m for m in self._sorted_minutes if m >= minute]
                if later:
                    return h, later[0]
        return None

    def next(self, t: datetime) -> datetime | None:
        """SpecSchedule.Next: the first firing strictly after `t` (a naive `t` is UTC), or None
        (robfig's zero time) when none falls before the end of the fifth year after `t`."""
        if t.tzinfo is not None:
            t = t.astimezone(timezone.utc).replace(tzinfo=None)
        if self.never_fires():
            return None
        if t >= datetime.max - timedelta(minutes=1):
            return datetime.max  # the next minute is past what datetime holds: later than any `now`
        # Next starts at the upcoming second; the standard parser's seconds field is 0 only, so
        # the first candidate is the upcoming whole minute.
        start = t.replace(microsecond=0) + timedelta(seconds=1)
        if start.second:
            start = start.replace(second=0) + timedelta(minutes=1)
        year_limit = start.year + YEARS_SEARCHED
        year, month, day, hour, minute = start.year, start.month, start.day, start.hour, start.minute
        while year <= year_limit:
            if year > MAXYEAR:  # a firing Go could hold but datetime cannot: later than any `now` here
                return datetime.max
            if month in self.months:
                for d in range(day, calendar.monthrange(year, month)[1] + 1):
                    if self.day_matches(year, month, d):
                        at = self._first_time(hour, minute) if d == day else self._first_time(0, 0)
                        if at is not None:
                            return datetime(year, month, d, *at)
                    hour = minute = 0
            month, day, hour, minute = month + 1, 1, 0, 0
            if month > 12:
                year, month = year + 1, 1
        return None

    def next_after(self, t: datetime, limit: datetime) -> datetime | None:
        """The first firing strictly after `t` and no later than `limit`, else None: `next`
        bounded (the replay asks when a CronJob runs or a budget window opens next)."""
        found = self.next(t)
        if found is None:
            return None
        if t.tzinfo is not None:
            found = found.replace(tzinfo=timezone.utc).astimezone(t.tzinfo)
        return found if found <= limit else None

    def never_fires(self) -> bool:
        """No date can match (`0 0 31 2 *`, `0 0 30 2 *`): kubefacts.cron.never_fires."""
        return self._never

def is_active(schedule: str, duration_seconds: float, now: datetime) -> bool:
    """Budget.IsActive: the next firing after (now - duration) is not after now. robfig's zero
    time (no firing within five years) is not after now either, so a budget whose schedule never
    fires is always active, as Karpenter has it."""
    if now.tzinfo is not None:
        now = now.astimezone(timezone.utc).replace(tzinfo=None)
    try:
        checkpoint = now - timedelta(seconds=duration_seconds)
    except OverflowError:  # before year 1, which Go's time holds and datetime does not
        checkpoint = datetime.min
    hit = Schedule(schedule).next(checkpoint)
    return hit is None or hit <= now
