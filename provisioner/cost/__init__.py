"""What NodePools cost: the LP lower bound of a plan, the requirement search of `tune`, and each
NodePool's worst-case hourly price within its limits."""
from .ceiling import PoolCeiling, pool_ceiling, pool_ceilings
from .tune import TuneResult, apply_changes, replace_requirements, tune

__all__ = ["PoolCeiling", "pool_ceiling", "pool_ceilings", "TuneResult", "apply_changes", "replace_requirements",
           "tune"]
