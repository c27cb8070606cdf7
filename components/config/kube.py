"""Kubernetes value rules (label keys and values, quantities, durations) as pydantic types.

Checked at config load so that a value Kubernetes or Karpenter would reject never reaches a
plan: the API server would refuse it only at apply time, after other resources changed.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated

import re2  # Go RE2 semantics, as the API server's patterns: `$` never matches before a final "\n"
from pydantic import AfterValidator, BeforeValidator

from provisioner.quantity import MAX_DURATION_NS, MAX_DURATION_TEXT

from .karpenter_rules import cron_problem

# Every pattern is matched whole (fullmatch), never with Python's `re` `$`, which would accept
# "batch-jobs\n" that the API server refuses.

_DNS_SUBDOMAIN = re2.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re2.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_LABEL = re2.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

# Quantity grammar from k8s.io/apimachinery/pkg/api/resource.
_QUANTITY = re2.compile(r"(?P<num>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}

# Quantity.Value() is an int64; larger values cannot be compared by the controllers.
MAX_QUANTITY = Decimal(2**63)
MAX_EXPONENT = 30

# Karpenter's own patterns (karpenter.sh_nodepools.yaml, v1).
_KARPENTER_DURATION = re2.compile(r"(([0-9]+(s|m|h))+|Never)")
_BUDGET_DURATION = re2.compile(r"((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)")
_BUDGET_NODES = re2.compile(r"((100|[0-9]{1,2})%|[0-9]+)")
_DURATION_PART = re2.compile(r"([0-9]+)(h|m|s)")
_UNIT_NS = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9}


def _check_go_duration_range(value: str) -> str:
    """The CRD patterns admit any number of digits; time.ParseDuration holds int64 nanoseconds."""
    if value != "Never" and sum(int(n) * _UNIT_NS[u] for n, u in _DURATION_PART.findall(value)) > MAX_DURATION_NS:
        raise ValueError(f"{value!r} is longer than Karpenter can read: Go durations are int64 nanoseconds, "
                         f"at most {MAX_DURATION_TEXT}")
    return value


def check_label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        raise ValueError(f"{key!r} is not a valid label key: at most one '/' is allowed")
    if "/" in key and not prefix:
        raise ValueError(f"{key!r} is not a valid label key: the prefix before '/' is empty")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(f"{key!r} is not a valid label key: prefix {prefix!r} must be a lower-case DNS subdomain")
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise ValueError(
            f"{key!r} is not a valid label key: name part must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return key


def check_label_value(value: str) -> str:
    if value == "":
        return value
    if len(value) > 63 or not _NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return value


def check_dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name: lower-case letters, digits and '-', at most 63 characters")
    return value


def parse_quantity(value: str | int | float) -> Decimal:
    """A Kubernetes quantity as a Decimal (cores for CPU, bytes for memory)."""
    text = str(value)
    match = _QUANTITY.fullmatch(text) if len(text) <= 100 else None
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)")
    try:
        number = Decimal(match["num"])
    except InvalidOperation as err:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from err
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        scaled = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        scaled = number * _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:  # 1e9999999 would overflow Decimal (and means nothing)
            raise ValueError(f"{value!r}: exponent {exponent} is out of range (at most {MAX_EXPONENT})")
        scaled = number * (Decimal(10) ** exponent)
    if abs(scaled) >= MAX_QUANTITY:
        raise ValueError(f"{value!r} is too large: quantities must stay below 2^63 (Quantity.Value() is an int64)")
    return scaled


def _number_to_text(value: object) -> object:
    # YAML reads `cpu: 100` as an int; Kubernetes treats it as the quantity "100".
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def check_quantity(value: str) -> str:
    if parse_quantity(value) < 0:
        raise ValueError(f"{value!r} is negative; quantities here must be zero or more")
    return str(value)


def check_karpenter_duration(value: str) -> str:
    if not _KARPENTER_DURATION.fullmatch(value):
        raise ValueError(f"{value!r} is not a duration Karpenter accepts (e.g. 30s, 10m, 720h, or Never)")
    return _check_go_duration_range(value)


def check_budget_duration(value: str) -> str:
    if not _BUDGET_DURATION.fullmatch(value):
        raise ValueError(f"{value!r} is not a budget duration (hours and minutes, e.g. 8h, 30m, 1h30m)")
    return _check_go_duration_range(value)


def check_budget_nodes(value: str) -> str:
    if not _BUDGET_NODES.fullmatch(value):
        raise ValueError(f"{value!r} is not a budget size: a node count (e.g. 5) or a percentage (e.g. 10%)")
    return value


def check_cron(value: str) -> str:
    """Parsed as Karpenter parses budget schedules (robfig/cron ParseStandard), so a schedule it
    cannot read (`a b c d e`: the pool would silently never disrupt) is refused here."""
    problem = cron_problem(value)
    if problem:
        raise ValueError(f"{problem} (e.g. '0 9 * * mon-fri', or @daily)")
    return value


LabelKey = Annotated[str, AfterValidator(check_label_key)]
LabelValue = Annotated[str, AfterValidator(check_label_value)]
DnsLabel = Annotated[str, AfterValidator(check_dns_label)]
Quantity = Annotated[str, BeforeValidator(_number_to_text), AfterValidator(check_quantity)]
KarpenterDuration = Annotated[str, AfterValidator(check_karpenter_duration)]
BudgetDuration = Annotated[str, AfterValidator(check_budget_duration)]
BudgetNodes = Annotated[str, AfterValidator(check_budget_nodes)]
CronSchedule = Annotated[str, AfterValidator(check_cron)]
