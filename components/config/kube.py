"""Kubernetes and Karpenter value rules as pydantic types, judged by the kernel (kubefacts).

Checked at config load so that a value Kubernetes or Karpenter would reject never reaches a
plan: the API server would refuse it only at apply time, after other resources changed.
"""

from __future__ import annotations

from typing import Annotated

import re2
from pydantic import AfterValidator, BeforeValidator

from kubefacts import cron, duration, quantity
from kubefacts.labels import check_dns_label, check_label_key, check_label_value

_BUDGET_NODES = re2.compile(r"((100|[0-9]{1,2})%|[0-9]+)")


def _number_to_text(value: object) -> object:
    # YAML reads `cpu: 100` as an int; Kubernetes treats it as the quantity "100".
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def check_quantity(value: str) -> str:
    if quantity.decimal(value) < 0:
        raise ValueError(f"{value!r} is negative; quantities here must be zero or more")
    return str(value)


def check_karpenter_duration(value: str) -> str:
    problem = duration.karpenter_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def check_budget_duration(value: str) -> str:
    problem = duration.budget_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def check_budget_nodes(value: str) -> str:
    if not _BUDGET_NODES.fullmatch(value):
        raise ValueError(f"{value!r} is not a budget size: a node count (e.g. 5) or a percentage (e.g. 10%)")
    return value


def check_cron(value: str) -> str:
    """Parsed as Karpenter parses budget schedules (robfig/cron ParseStandard), so a schedule it
    cannot read (`a b c d e`: the pool would silently never disrupt) is refused here."""
    problem = cron.problem(value)
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
