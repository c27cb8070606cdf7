"""Team NodeOverlays (karpenter.sh/v1alpha1): pure builders and the component declaring them."""

from __future__ import annotations

from typing import Any, Sequence

import pulumi

from .config import TEAM_LABEL, PlatformConfig, Team
from .config.nodeoverlays import NODEPOOL_LABEL, NodeOverlay
from .kubernetes import custom_resources

MANAGED_BY = {"app.kubernetes.io/managed-by": "karpenter-platform"}


def nodeoverlay_name(team: Team, overlay: NodeOverlay) -> str:
    return f"{team.name}-{overlay.name}"


def nodeoverlay_manifest(team: Team, overlay: NodeOverlay) -> dict[str, Any]:
    """The NodeOverlay exactly as it will be applied. Unless the team already narrowed it to some of
    its pools, a `karpenter.sh/nodepool In [<team's pools>]` requirement keeps it on the team's own
    NodePools (an overlay otherwise applies cluster-wide)."""
    requirements = []
    for requirement in overlay.requirements:
        dumped = requirement.model_dump(by_alias=True, exclude_none=True)
        if not dumped["values"]:
            del dumped["values"]
        requirements.append(dumped)
    if not any(r.key == NODEPOOL_LABEL for r in overlay.requirements):
        requirements.append({"key": NODEPOOL_LABEL, "operator": "In",
                             "values": sorted(f"{team.name}-{pool.name}" for pool in team.node_pools)})
    spec: dict[str, Any] = {"requirements": requirements}
    for key in ("price", "price_adjustment", "weight"):
        value = getattr(overlay, key)
        if value is not None:
            spec[NodeOverlay.model_fields[key].alias or key] = value
    if overlay.capacity:
        spec["capacity"] = dict(overlay.capacity)
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": nodeoverlay_name(team, overlay), "labels": {**MANAGED_BY, TEAM_LABEL: team.name}},
        "spec": spec,
    }


def nodeoverlay_manifests(config: PlatformConfig) -> list[dict[str, Any]]:
    return [nodeoverlay_manifest(team, overlay) for team in config.teams for overlay in team.node_overlays
            if team.node_pools]


def wants_node_overlays(config: PlatformConfig) -> bool:
    """Whether any team declares a NodeOverlay (the controller's nodeOverlay gate must then be on)."""
    return bool(nodeoverlay_manifests(config))


class NodeOverlays(pulumi.ComponentResource):
    """Every team's NodeOverlays; `depends_on` (the controller, which serves the CRD) on each one."""

    def __init__(self, name: str, config: PlatformConfig, *, depends_on: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:NodeOverlays", name, None, opts)
        self.overlays = custom_resources("nodeoverlay", nodeoverlay_manifests(config), parent=self,
                                         depends_on=depends_on)
        self.register_outputs({"names": sorted(self.overlays)})
