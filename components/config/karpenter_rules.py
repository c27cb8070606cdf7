"""Karpenter's NodePool/NodeClaim runtime rules and the API server's metadata rules, as pure checks.

Sources (kubernetes-sigs/karpenter and aws/karpenter-provider-aws at v1.14.1):
- `pkg/apis/v1/labels.go` (core): restricted domain karpenter.sh, restricted kubernetes.io/hostname,
  well-known labels and their known values (capacity type);
- `pkg/apis/v1/labels.go` (provider): restricted domain karpenter.k8s.aws and its well-known labels
  (no `karpenter.k8s.aws/ec2nodeclass`: it is not registered as well-known), tenancy values;
- `pkg/apis/v1/nodepool_validation.go`, `nodeclaim_validation.go`: label keys and values, duplicate
  taint key/effect pairs across `taints` and `startupTaints`, requirement values;
- `pkg/apis/v1/nodepool.go`: budget schedules parsed by robfig/cron's standard parser;
- the NodePool CRD: at most 100 requirements, 100 labels, 50 budgets.
Kubelet (k8s.io/kubelet/pkg/apis/well_known_labels.go) refuses `--node-labels` in the kubernetes.io
and k8s.io domains other than its own list, and Karpenter passes a NodePool's labels that way: a
node carrying one never registers. API machinery (apimachinery/pkg/api/validation/objectmeta.go):
annotation keys are qualified names and all annotations together hold at most 256 KiB.
"""

from __future__ import annotations


import re2

MAX_REQUIREMENTS = 100
MAX_LABELS = 100
MAX_BUDGETS = 50
MAX_ANNOTATIONS_BYTES = 256 * 1024

TEAM_LABEL_KEY = "karpenter-platform.io/team"  # same as teams.TEAM_LABEL (teams imports nodepools)

# Label, taint and requirement rules live in the kernel (kubefacts.labels).
from kubefacts.labels import qualified_name  # noqa: E402


# --- object metadata ---------------------------------------------------------------------------

def annotations_problem(annotations: dict[str, str]) -> str | None:
    """ValidateAnnotations: qualified-name keys, at most 256 KiB of keys and values together."""
    for key in annotations:
        problem = qualified_name(key)
        if problem:
            return f"annotation key {problem}"
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if total > MAX_ANNOTATIONS_BYTES:
        return f"annotations total {total:,} bytes; the API server allows at most 256 KiB ({MAX_ANNOTATIONS_BYTES:,})"
    return None


# --- robfig/cron standard schedules ------------------------------------------------------------

_CRON_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, min, max, names) per field of ParseStandard: minute, hour, day of month, month, day of week.
_CRON_FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
                ("month", 1, 12, _MONTHS), ("day of week", 0, 6, _DAYS))


def _cron_number(text: str, names: dict[str, int], field: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re2.fullmatch(r"[0-9]{1,9}", text):
        raise ValueError(f"{field}: {text!r} is not a number{' or a name' if names else ''}")
    return int(text)


def _cron_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """getRange of robfig/cron: `*`/`?`, `a`, `a-b`, each with an optional `/step`, comma-separated.
    Returns the values and whether robfig sets the star bit (a `*`/`?` part with no step above 1)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        range_part, slash, step_text = part.partition("/")
        if slash and (not step_text or "/" in step_text):
            raise ValueError(f"{field}: {part!r} has a malformed step")
        step = 1
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
        values.update(range(start, end + 1, step))
        star = star or (range_part in ("*", "?") and step == 1)
    return values, star


# The most days each month has (29 for February: a leap year's).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def cron_problem(schedule: str) -> str | None:
    """Why robfig/cron's ParseStandard (what Karpenter uses for budget schedules) refuses it, or
    why it can never fire (robfig's Next then returns the zero time and pkg/apis/v1/nodepool.go
    Budget.IsActive treats the budget as always active)."""
    if schedule.startswith("@"):
        return None if schedule in _CRON_DESCRIPTORS else (
            f"{schedule!r} is not a schedule descriptor ({', '.join(sorted(_CRON_DESCRIPTORS))})")
    fields = schedule.split()
    if len(fields) != 5 or schedule != schedule.strip():
        return f"{schedule!r} is not a cron schedule: 5 fields (minute hour day-of-month month day-of-week) expected"
    parsed = []
    for text, (field, low, high, names) in zip(fields, _CRON_FIELDS):
        try:
            parsed.append(_cron_field(text, field, low, high, names))
        except ValueError as err:
            return f"{schedule!r} is not a cron schedule Karpenter can parse: {err}"
    (days, days_star), (months, _), (_, weekdays_star) = parsed[2], parsed[3], parsed[4]
    # robfig's dayMatches needs both day fields when either is a star; with day-of-week `*` a
    # day of the month no named month has never matches, Next returns the zero time, and
    # Budget.IsActive then holds the budget active forever.
    if weekdays_star and not days_star and not any(d <= _MONTH_DAYS[m - 1] for m in months for d in days):
        return (f"{schedule!r} never fires (no month it names has day {', '.join(map(str, sorted(days)))}); "
                "Karpenter would keep this budget active all the time")
    return None


__all__ = ["MAX_ANNOTATIONS_BYTES", "MAX_BUDGETS", "MAX_LABELS", "MAX_REQUIREMENTS", "TEAM_LABEL_KEY",
           "annotations_problem", "cron_problem"]
