"""Durations: Go's time.ParseDuration and Karpenter's two CRD grammars.

- `go_nanoseconds`/`go_seconds` mirror `time.ParseDuration` (Go src/time/format.go): an optional
  sign, then one or more decimal numbers (fraction allowed) each with a unit of ns, us, µs, μs, ms,
  s, m or h, in any order ("30m1h" is 90 minutes); "0" alone needs no unit; the total must fit an
  int64 of nanoseconds (about 2562047h).
- `NillableDuration` fields (`expireAfter`, `consolidateAfter`, `terminationGracePeriod`; karpenter
  pkg/apis/v1/duration.go) take the CRD pattern `(([0-9]+(s|m|h))+|Never)`, then ParseDuration;
  "Never" is nil.
- A disruption budget's `duration` takes `((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)`
  (karpenter.sh_nodepools.yaml, v1).
"""
from __future__ import annotations

import re2

INT64_MAX = 2**63 - 1
MAX_DURATION_TEXT = "2562047h47m16.854775807s"  # INT64_MAX nanoseconds, as Go writes it
_NS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
       "h": 3600 * 10**9}

KARPENTER_DURATION = re2.compile(r"(([0-9]+(s|m|h))+|Never)")
BUDGET_DURATION = re2.compile(r"((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)")
NEVER = "Never"


def _leading_int(s: str) -> tuple[int, str]:
    """Go's leadingInt: the digits at the start, refusing more than 1<<63."""
    i, x = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        x = x * 10 + ord(s[i]) - 48
        if x > 1 << 63:
            raise OverflowError
        i += 1
    return x, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    """Go's leadingFraction: digits after the point; those past int64 precision are dropped."""
    i, x, scale, overflow = 0, 0, 1.0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            if x > INT64_MAX // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - 48
                if y > 1 << 63:
                    overflow = True
                else:
                    x, scale = y, scale * 10
        i += 1
    return x, scale, s[i:]


def go_nanoseconds(text: str) -> int:
    """time.ParseDuration: nanoseconds of `text`; ValueError with Go's reason when it refuses."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration")
    original, s, negative = text, text, False
    if s and s[0] in "+-":
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"invalid duration {original!r}")
    total = 0
    try:
        while s:
            if not (s[0] == "." or "0" <= s[0] <= "9"):
                raise ValueError(f"invalid duration {original!r}")
            before = len(s)
            whole, s = _leading_int(s)
            pre, post, fraction, scale = before != len(s), False, 0, 1.0
            if s and s[0] == ".":
                s = s[1:]
                before = len(s)
                fraction, scale, s = _leading_fraction(s)
                post = before != len(s)
            if not pre and not post:
                raise ValueError(f"invalid duration {original!r}")
            i = 0
            while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
                i += 1
            if i == 0:
                raise ValueError(f"missing unit in duration {original!r}")
            unit_text, s = s[:i], s[i:]
            unit = _NS.get(unit_text)
            if unit is None:
                raise ValueError(f"unknown unit {unit_text!r} in duration {original!r}")
            if whole > (1 << 63) // unit:
                raise OverflowError
            whole *= unit
            if fraction > 0:
                whole += int(float(fraction) * (float(unit) / scale))
                if whole > 1 << 63:
                    raise OverflowError
            total += whole
            if total > 1 << 63:
                raise OverflowError
    except OverflowError:
        raise ValueError(f"invalid duration {original!r}: longer than Go durations hold (int64 nanoseconds, at most {MAX_DURATION_TEXT})") from None
    if negative:
        return -total
    if total > INT64_MAX:
        raise ValueError(f"invalid duration {original!r}: longer than Go durations hold (int64 nanoseconds, at most {MAX_DURATION_TEXT})")
    return total


def go_seconds(text: str) -> float:
    """time.ParseDuration in seconds (whole seconds exact, however large)."""
    whole, nanos = divmod(go_nanoseconds(text), 10**9)
    return whole + nanos / 1e9


def go_seconds_or_none(text: object) -> float | None:
    """time.ParseDuration in seconds, or None where Go refuses `text` (upstream then ignores it)."""
    try:
        return go_seconds(text)  # type: ignore[arg-type]
    except ValueError:
        return None


def karpenter_problem(text: object) -> str | None:
    """Why a NillableDuration field (expireAfter, consolidateAfter, terminationGracePeriod) refuses
    `text`, or None: the CRD pattern, then ParseDuration (an int64 overflow passes the pattern)."""
    if not isinstance(text, str) or not KARPENTER_DURATION.fullmatch(text):
        return f"{text!r} is not a duration Karpenter accepts (e.g. 30s, 10m, 720h, or Never)"
    if text != NEVER:
        try:
            go_nanoseconds(text)
        except ValueError as err:
            return str(err)
    return None


def karpenter_seconds(text: str) -> int | None:
    """Whole seconds of a NillableDuration; None for "Never"; ValueError when Karpenter refuses it."""
    problem = karpenter_problem(text)
    if problem:
        raise ValueError(problem)
    return None if text == NEVER else go_nanoseconds(text) // 10**9


def budget_problem(text: object) -> str | None:
    """Why a disruption budget's `duration` is refused, or None."""
    if not isinstance(text, str) or not BUDGET_DURATION.fullmatch(text):
        return f"{text!r} is not a budget duration (hours and minutes, e.g. 8h, 30m, 1h30m)"
    try:
        go_nanoseconds(text)
    except ValueError as err:
        return str(err)
    return None


__all__ = [
    "BUDGET_DURATION",
    "INT64_MAX",
    "KARPENTER_DURATION",
    "MAX_DURATION_TEXT",
    "NEVER",
    "budget_problem",
    "go_nanoseconds",
    "go_seconds",
    "go_seconds_or_none",
    "karpenter_problem",
    "karpenter_seconds",
]
