"""The platform's own names on the objects it renders, and the annotation values' grammar.

The config writes them (components/config/teams.py), the policy pack judges the rendered objects
by them, and the provisioner reads them (tune never proposes a cap the declared largest pod cannot
live with): one fact, one place.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from .quantity import decimal

TEAM_LABEL = "karpenter-platform.io/team"
# The largest pod the team runs on the pool: a JSON object of resource requests,
# e.g. {"cpu": "32", "memory": "120Gi", "nvidia.com/gpu": "4"}.
LARGEST_POD_ANNOTATION = "karpenter-platform.io/largest-pod"


def largest_pod_requests(raw: object) -> dict[str, str | int | float]:
    """The requests of a largest-pod annotation value, as written; ValueError unless it is a
    non-empty JSON object of Kubernetes quantities."""
    if not isinstance(raw, str):
        raise ValueError("not a string")
    try:
        requests = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(str(err)) from None
    if not isinstance(requests, Mapping) or not requests:
        raise ValueError("not a non-empty JSON object")
    out: dict[str, str | int | float] = {}
    for name, value in requests.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{name}: {value!r} is not a quantity")
        decimal(value)  # raises ValueError for what is not a quantity
        out[str(name)] = value
    return out
