"""The `consolidate` command's pass, kept importable here: the controller (controller.py) runs the
methods, each in its own module (emptiness.py, drift.py, multinodeconsolidation.py,
singlenodeconsolidation.py) behind types.Method; what consolidation methods share is
consolidation_core.py (upstream's consolidation.go)."""
from __future__ import annotations

from .controller import WAITS, Action, ConsolidationResult, assumptions, consolidate
from .multinodeconsolidation import MAX_MULTI_NODE

__all__ = ["consolidate", "ConsolidationResult", "Action", "assumptions", "WAITS", "MAX_MULTI_NODE"]
