"""Per-environment ceilings on one NodePool's `spec.limits`: the defaults of the policy pack's
`nodepool-limits-within-ceiling` (policies/levels.py reads them from here) and the limits the
importer gives a NodePool that has none, so what it writes passes in every environment.
An environment without a row gets `default`: the strictest (dev's) ceilings.
"""
from __future__ import annotations

ENVIRONMENTS = ("dev", "staging", "prod")
DEFAULT_ROW = "default"

# Largest `spec.limits` a single NodePool may declare, per environment (Kubernetes quantities).
CEILINGS: dict[str, dict[str, str]] = {
    "dev": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8"},
    "staging": {"cpu": "512", "memory": "4Ti", "nvidia.com/gpu": "32"},
    "prod": {"cpu": "1024", "memory": "4Ti", "nvidia.com/gpu": "64"},
    DEFAULT_ROW: {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8"},
}


def row(environment: str | None) -> str:
    """The table row an environment uses."""
    return environment if environment in ENVIRONMENTS else DEFAULT_ROW


def ceilings(environment: str | None) -> dict[str, str]:
    return dict(CEILINGS[row(environment)])
