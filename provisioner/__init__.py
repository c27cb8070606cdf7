"""Karpenter's provisioning decisions in Python (simulator and in-cluster advisor).

Public surface (see README.md):
    simulate(objects, catalog=None, region=..., zones=..., spot_discount=..., origins=None) -> SimulationResult
    load_objects(objects, origins=None) -> Inputs        # dicts -> models; raises InputError
    simulate_inputs(inputs, catalog=None, ...) -> SimulationResult
    shipped_catalog(), load_catalog_file(path), catalog_from_dict(data)

The names load on first use (PEP 562): the config loader imports only `provisioner.safeyaml`, and a
refused stack file should not first pay for numpy and the scheduler (about half a second).
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "simulate": ".api", "simulate_inputs": ".api", "load_objects": ".loader", "InputError": ".errors",
    "Inputs": ".models", "SimulationResult": ".result", "NodeClaimResult": ".result", "Unschedulable": ".result",
    "Catalog": ".catalog", "shipped_catalog": ".catalog", "load_catalog_file": ".catalog",
    "catalog_from_dict": ".catalog",
}

__all__ = [
    "simulate", "simulate_inputs", "load_objects", "InputError", "Inputs", "SimulationResult", "NodeClaimResult",
    "Unschedulable", "Catalog", "shipped_catalog", "load_catalog_file", "catalog_from_dict",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
