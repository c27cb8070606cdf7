"""A team file, `stacks/teams/<team>.yaml`: the team's NodePools and per-environment overrides."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from .base import Model
from .kube import DnsLabel
from .nodeoverlays import NODEPOOL_LABEL, NodeOverlay
from .nodepools import NodePool

TEAM_LABEL = "karpenter-platform.io/team"
# Team facts put on each NodePool, so that the policy pack judges the declared object itself
# (the same at `pulumi preview` and over the offline render).
ALLOW_SPOT_ANNOTATION = "karpenter-platform.io/allow-spot"
LARGEST_POD_ANNOTATION = "karpenter-platform.io/largest-pod"
BUDGET_ANNOTATION = "karpenter-platform.io/budget-usd-hour"


class EnvironmentOverride(Model):
    """Changes for one environment, merged over the team's NodePools by pool name."""

    node_pools: dict[DnsLabel, dict[str, Any]] = Field(default_factory=dict)
    """Pool name -> partial NodePool (same keys as a NodePool), e.g. `{frontend: {limits: {cpu: "1000"}}}`."""
    exclude_node_pools: list[DnsLabel] = Field(default_factory=list)
    """Pools this environment does not run."""


class Team(Model):
    """A product team and the NodePools it owns."""

    name: DnsLabel
    """Team name; equals the file name. NodePools render as `<team>-<pool>`, labelled
    `karpenter-platform.io/team=<team>`."""
    owner: str | None = None
    """Who to ask (an e-mail or a channel); put on the NodePools as an annotation."""
    allow_spot: bool = True
    """Whether this team's pools may use spot capacity (checked by the policy pack)."""
    node_pools: list[NodePool]
    """The team's NodePools."""
    budget: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    """Hourly budget in USD per environment, e.g. `{dev: 20, prod: 400}`: the most the team's
    NodePools together may cost at their limits (each pool's worst case from the catalog, summed;
    see docs/cost.md). Checked by the policy `team-budget` (mandatory in prod); an environment
    without an entry has no budget. A finite number above 0 (`Infinity`, `1e999` are refused)."""
    node_overlays: list[NodeOverlay] = Field(default_factory=list)
    """The team's NodeOverlays (karpenter.sh/v1alpha1), rendered as `<team>-<name>` and limited to
    the team's own NodePools."""
    environments: dict[str, EnvironmentOverride] = Field(default_factory=dict)
    """Per-environment overrides, keyed by environment (stack) name. Already applied to `nodePools`."""

    @model_validator(mode="after")
    def _overlays_stay_in_team(self) -> Team:
        own = {f"{self.name}-{pool.name}" for pool in self.node_pools}
        names: set[str] = set()
        # A model rule cannot set the error's location, so the message carries the key path.
        for index, overlay in enumerate(self.node_overlays):
            if overlay.name in names:
                raise ValueError(f"nodeOverlays[{index}].name: {overlay.name!r} is defined twice in this team")
            names.add(overlay.name)
            for r_index, requirement in enumerate(overlay.requirements):
                foreign = sorted(set(requirement.values) - own) if requirement.key == NODEPOOL_LABEL else []
                if foreign:
                    raise ValueError(f"nodeOverlays[{index}].requirements[{r_index}]: {NODEPOOL_LABEL} may only name "
                                     f"this team's NodePools ({', '.join(sorted(own)) or 'none'}), not {', '.join(foreign)}")
        return self
