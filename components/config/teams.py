"""A team file, `stacks/teams/<team>.yaml`: the team's NodePools and per-environment overrides."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, model_validator

from kubefacts.platform import LARGEST_POD_ANNOTATION, TEAM_LABEL as TEAM_LABEL  # re-exported: the pack reads it here

from .base import Model
from .karpenter_rules import annotations_problem
from .kube import DnsLabel
from .nodeoverlays import NODEPOOL_LABEL, NodeOverlay
from .nodepools import NodePool

# Team facts put on each NodePool, so that the policy pack judges the declared object itself
# (the same at `pulumi preview` and over the offline render).
ALLOW_SPOT_ANNOTATION = "karpenter-platform.io/allow-spot"
BUDGET_ANNOTATION = "karpenter-platform.io/budget-usd-hour"
OWNER_ANNOTATION = "karpenter-platform.io/owner"
# Foreground deletion keeps the NodePool until its NodeClaims are gone (they are owned by it
# and Karpenter's finalizer drains each node), so `pulumi destroy` waits for the drain instead
# of moving on to the controller and the IAM roles while nodes still exist.
DELETION_POLICY = {"pulumi.com/deletionPropagationPolicy": "foreground"}


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
    """Who to ask (an e-mail or a channel); put on the NodePools as an annotation, so it must fit
    the API server's 256 KiB for all of a NodePool's annotations."""
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
    """Per-environment overrides, keyed by environment (stack) name. Already applied to `nodePools`.
    Every render checks the whole file whichever stack it renders: the base pools (what a stack
    without an override sees) and each environment's pools as that environment sees them; a key
    (here or in `budget`) that names no stack is an error (`did you mean 'prod'?`)."""

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


def nodepool_annotations(team: Team, pool: NodePool, environment: str | None) -> dict[str, str]:
    """The annotations on a rendered NodePool's own metadata (not its nodes': Karpenter treats a
    change of the template's labels, annotations or taints as drift and replaces every node)."""
    annotations = {**DELETION_POLICY, ALLOW_SPOT_ANNOTATION: "true" if team.allow_spot else "false"}
    if team.owner:
        annotations[OWNER_ANNOTATION] = team.owner
    if environment in team.budget:  # the team's budget for this environment, judged by the policy pack
        annotations[BUDGET_ANNOTATION] = f"{team.budget[environment]:g}"
    if pool.largest_pod:
        annotations[LARGEST_POD_ANNOTATION] = json.dumps(dict(pool.largest_pod), sort_keys=True)
    return annotations


def annotation_issues(team: Team, environment: str | None) -> list[tuple[str, str]]:
    """`(key path, message)` when a NodePool's rendered annotations exceed what the API server
    takes (256 KiB together, apimachinery ValidateAnnotations): the team's `owner` is the one
    that can grow, so it is named."""
    for index, pool in enumerate(team.node_pools):
        annotations = nodepool_annotations(team, pool, environment)
        problem = annotations_problem(annotations)
        if not problem:
            continue
        if len(annotations.get(LARGEST_POD_ANNOTATION, "")) > len(team.owner or ""):
            return [(f"nodePools[{index}].largestPod", f"{len(pool.largest_pod or {}):,} resources: NodePool "
                     f"{team.name}-{pool.name} carries them as the annotation {LARGEST_POD_ANNOTATION}, and its {problem}")]
        return [("owner", f"{len(team.owner or ''):,} characters: NodePool {team.name}-{pool.name} carries it as the "
                          f"annotation {OWNER_ANNOTATION}, and its {problem}; give an e-mail or a channel")]
    return []
