"""Karpenter's provisioning decisions in Python (simulator and in-cluster advisor).

Public surface (see README.md):
    simulate(objects, catalog=None, region=..., zones=..., spot_discount=..., origins=None) -> SimulationResult
    load_objects(objects, origins=None) -> Inputs        # dicts -> models; raises InputError
    simulate_inputs(inputs, catalog=None, ...) -> SimulationResult
    shipped_catalog(), load_catalog_file(path), catalog_from_dict(data)

The names load on first use (PEP 562): a refused stack file should not first pay for numpy and the
scheduler (about half a second). Outside the package only these names are used.
"""
from __future__ import annotations

from typing import Any

from . import lazy

_EXPORTS = {
    "simulate": ".api", "simulate_inputs": ".api", "load_objects": ".loader", "InputError": ".errors",
    "Inputs": ".models", "SimulationResult": ".result", "NodeClaimResult": ".result", "Unschedulable": ".result",
    "Catalog": ".catalog", "shipped_catalog": ".catalog", "load_catalog_file": ".catalog",
    "catalog_from_dict": ".catalog",
    # What the rest of the repository may use beyond simulate (policies, offline): nothing else of
    # the package's internals is imported from outside it (.importlinter holds that).
    "pool_instance_types": ".api", "PoolInstanceTypes": ".api", "requirement_admits": ".api",
    "pool_ceilings": ".cost.ceiling", "team_totals": ".cost.ceiling",
    "drift": ".disruption.drift", "DriftReport": ".disruption.drift", "read_paths": ".manifests",
    # The cluster commands' shared "no kubeconfig" refusal (offline.preflight).
    "NoKubeconfig": ".controller.kube", "api_client_from_environment": ".controller.kube",
    # offline.tune: the provisioner's own `tune` command line, run with the policy pack's veto.
    "build_parser": ".cli", "EXIT_INVALID_INPUT": ".cli", "replace_requirements": ".cost.tune",
    # policies' nodepool-fits-largest-pod: the rule tune keeps, so both give one verdict.
    "largest_pod_shortfall": ".cost.largest_pod", "LARGEST_POD_RESOURCES": ".cost.largest_pod",
    # offline.pr_report's replay section.
    "ReplayOptions": ".replay.engine", "before_after": ".replay.judge", "load_trace": ".replay.trace",
}

__all__ = [
    "simulate", "simulate_inputs", "load_objects", "InputError", "Inputs", "SimulationResult", "NodeClaimResult",
    "Unschedulable", "Catalog", "shipped_catalog", "load_catalog_file", "catalog_from_dict",
    "pool_instance_types", "PoolInstanceTypes", "requirement_admits", "pool_ceilings", "team_totals",
    "drift", "DriftReport", "read_paths", "NoKubeconfig", "api_client_from_environment",
    "build_parser", "EXIT_INVALID_INPUT", "replace_requirements", "largest_pod_shortfall", "LARGEST_POD_RESOURCES",
    "ReplayOptions", "before_after", "load_trace",
]


def __getattr__(name: str) -> Any:
    return lazy.load(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
