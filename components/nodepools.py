"""NodePools (karpenter.sh/v1) from team config: pure builders and the component declaring them."""

from __future__ import annotations

from typing import Any, Sequence

import pulumi

from .config import TEAM_LABEL, PlatformConfig, Team
from .config.teams import DELETION_POLICY, OWNER_ANNOTATION, nodepool_annotations  # noqa: F401 (names kept here)
from .config.nodepools import NodePool, Taint
from .config.odigos import NEEDS_INIT_TAINT
from .kubernetes import custom_resources

MANAGED_BY = {"app.kubernetes.io/managed-by": "karpenter-platform"}
DELETE_TIMEOUT = "30m"


def nodepool_name(team: Team, pool: NodePool) -> str:
    return f"{team.name}-{pool.name}"


def _taint(taint: Taint) -> dict[str, Any]:
    return taint.model_dump(by_alias=True, exclude_none=True)


def startup_taints(pool: NodePool, odigos_taint: bool) -> list[dict[str, Any]]:
    """The pool's startup taints plus, when Odigos' mount method needs it, `odigos.io/needs-init`
    (odiglet removes it once the node can serve instrumented pods)."""
    taints = [_taint(t) for t in pool.startup_taints]
    # Never a second copy: Karpenter refuses a key/effect pair twice across taints and startupTaints.
    declared = [t["key"] for t in taints] + [t.key for t in pool.taints if t.effect == "NoSchedule"]
    if odigos_taint and NEEDS_INIT_TAINT not in declared:
        taints.append({"key": NEEDS_INIT_TAINT, "effect": "NoSchedule"})
    return taints


def nodepool_manifest(team: Team, pool: NodePool, *, odigos_taint: bool = False,
                      environment: str | None = None) -> dict[str, Any]:
    """The NodePool object exactly as it will be applied."""
    requirements = [r.model_dump(by_alias=True, exclude_none=True) for r in pool.requirements]
    for requirement in requirements:
        if not requirement["values"]:
            del requirement["values"]
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.node_class},
        "requirements": requirements,
        "expireAfter": pool.expire_after,
    }
    if pool.taints:
        template_spec["taints"] = [_taint(t) for t in pool.taints]
    taints = startup_taints(pool, odigos_taint)
    if taints:
        template_spec["startupTaints"] = taints
    if pool.termination_grace_period:
        template_spec["terminationGracePeriod"] = pool.termination_grace_period
    template_metadata: dict[str, Any] = {"labels": {**pool.labels, TEAM_LABEL: team.name}}
    if pool.annotations:
        template_metadata["annotations"] = dict(pool.annotations)
    metadata_annotations = nodepool_annotations(team, pool, environment)
    spec: dict[str, Any] = {
        "template": {"metadata": template_metadata, "spec": template_spec},
        "disruption": pool.disruption.model_dump(by_alias=True, exclude_none=True),
    }
    if pool.limits is not None:
        spec["limits"] = dict(pool.limits)
    if pool.weight is not None:
        spec["weight"] = pool.weight
    if pool.replicas is not None:
        spec["replicas"] = pool.replicas
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": nodepool_name(team, pool), "labels": {**MANAGED_BY, TEAM_LABEL: team.name},
                     "annotations": metadata_annotations},
        "spec": spec,
    }


def nodepool_manifests(config: PlatformConfig) -> list[dict[str, Any]]:
    odigos_taint = config.settings.odigos.needs_startup_taint
    return [nodepool_manifest(team, pool, odigos_taint=odigos_taint, environment=config.environment)
            for team in config.teams for pool in team.node_pools]


class NodePools(pulumi.ComponentResource):
    """Every team's NodePools.

    `depends_on` (the controller release, the node classes, the AWS side) is applied to every
    NodePool itself: children do not inherit a component's dependencies, and `pulumi destroy`
    deletes in the reverse of the recorded ones, so NodePools go first while the rest stays."""

    def __init__(self, name: str, config: PlatformConfig, *, depends_on: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:NodePools", name, None, opts)
        self.pools = custom_resources("nodepool", nodepool_manifests(config), parent=self, depends_on=depends_on,
                                      delete_timeout=DELETE_TIMEOUT)
        self.register_outputs({"names": sorted(self.pools)})
