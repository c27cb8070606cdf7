"""Every policy of the pack, in the order of the level table."""

from __future__ import annotations

from . import cost, discovery, helm, iam, interruption, levels, nodeclasses, nodepools  # noqa: F401 - importing registers
from .registry import PolicySpec, registered



def _ordered() -> tuple[PolicySpec, ...]:
    by_name = {p.name: p for p in registered()}
    missing_levels = sorted(set(by_name) - set(levels.LEVELS))
    if missing_levels:
        raise RuntimeError(f"policies without a level row in policies/levels.py: {', '.join(missing_levels)}")
    return tuple(by_name[name] for name in levels.LEVELS if name in by_name)


ALL: tuple[PolicySpec, ...] = _ordered()
BY_NAME = {p.name: p for p in ALL}
