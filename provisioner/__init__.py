"""Karpenter's provisioning decisions in Python (simulator and in-cluster advisor).

Public surface (see README.md):
    simulate(objects, catalog=None, region=..., zones=..., spot_discount=..., origins=None) -> SimulationResult
    load_objects(objects, origins=None) -> Inputs        # dicts -> models; raises InputError
    simulate_inputs(inputs, catalog=None, ...) -> SimulationResult
    shipped_catalog(), load_catalog_file(path), catalog_from_dict(data)
"""
from .api import simulate, simulate_inputs
from .catalog import Catalog, catalog_from_dict, load_catalog_file, shipped_catalog
from .errors import InputError
from .loader import load_objects
from .models import Inputs
from .result import NodeClaimResult, SimulationResult, Unschedulable

__all__ = [
    "simulate", "simulate_inputs", "load_objects", "InputError", "Inputs", "SimulationResult", "NodeClaimResult",
    "Unschedulable", "Catalog", "shipped_catalog", "load_catalog_file", "catalog_from_dict",
]
