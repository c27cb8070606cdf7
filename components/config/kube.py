"""Kubernetes value rules (label keys and values, quantities, durations) as pydantic types.

Checked at config load so that a value Kubernetes or Karpenter would reject never reaches a
plan: the API server would refuse it only at apply time, after other resources changed.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# Quantity grammar from k8s.io/apimachinery/pkg/api/resource.
_QUANTITY = re.compile(r"^(?P<num>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}

# Karpenter's own patterns (karpenter.sh_nodepools.yaml, v1).
_KARPENTER_DURATION = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_CRON_MACROS = {"@annually", "@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


def check_label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        raise ValueError(f"{key!r} is not a valid label key: at most one '/' is allowed")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise ValueError(f"{key!r} is not a valid label key: prefix {prefix!r} must be a lower-case DNS subdomain")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise ValueError(
            f"{key!r} is not a valid label key: name part must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return key


def check_label_value(value: str) -> str:
    if value == "":
        return value
    if len(value) > 63 or not _NAME.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return value


def check_dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a valid name: lower-case letters, digits and '-', at most 63 characters")
    return value


def parse_quantity(value: str | int | float) -> Decimal:
    """A Kubernetes quantity as a Decimal (cores for CPU, bytes for memory)."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)")
    try:
        number = Decimal(match["num"])
    except InvalidOperation as err:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from err
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * (Decimal(10) ** int(suffix[1:]))


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
    if not _KARPENTER_DURATION.match(value):
        raise ValueError(f"{value!r} is not a duration Karpenter accepts (e.g. 30s, 10m, 720h, or Never)")
    return value


def check_budget_duration(value: str) -> str:
    if not _BUDGET_DURATION.match(value):
        raise ValueError(f"{value!r} is not a budget duration (hours and minutes, e.g. 8h, 30m, 1h30m)")
    return value


def check_budget_nodes(value: str) -> str:
    if not _BUDGET_NODES.match(value):
        raise ValueError(f"{value!r} is not a budget size: a node count (e.g. 5) or a percentage (e.g. 10%)")
    return value


def check_cron(value: str) -> str:
    fields = value.split()
    if value in _CRON_MACROS or (len(fields) == 5 and all(re.match(r"^[\d*/,\-A-Za-z?]+$", f) for f in fields)):
        return value
    raise ValueError(f"{value!r} is not a cron schedule (5 fields, e.g. '0 9 * * mon-fri', or @daily)")


LabelKey = Annotated[str, AfterValidator(check_label_key)]
LabelValue = Annotated[str, AfterValidator(check_label_value)]
DnsLabel = Annotated[str, AfterValidator(check_dns_label)]
Quantity = Annotated[str, BeforeValidator(_number_to_text), AfterValidator(check_quantity)]
KarpenterDuration = Annotated[str, AfterValidator(check_karpenter_duration)]
BudgetDuration = Annotated[str, AfterValidator(check_budget_duration)]
BudgetNodes = Annotated[str, AfterValidator(check_budget_nodes)]
CronSchedule = Annotated[str, AfterValidator(check_cron)]
