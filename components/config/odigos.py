"""Odigos (eBPF auto-instrumentation) and its Karpenter integration."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import Model

MountMethod = Literal["k8s-virtual-device", "k8s-host-path", "k8s-csi-driver", "k8s-init-container"]

# Mount methods whose agent files come from odiglet on the node: a pod must not start on a node
# before odiglet prepared it, so NodePools carry a startup taint that odiglet removes.
TAINTING_MOUNT_METHODS = ("k8s-host-path", "k8s-csi-driver")
NEEDS_INIT_TAINT = "odigos.io/needs-init"


class Toleration(Model):
    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class OdigosConfig(Model):
    """Odigos, installed from its helm chart with the Karpenter integration."""

    enabled: bool = False
    """Install Odigos."""
    chart_version: str = "1.35.1"
    """Exact odigos chart version (no ranges)."""
    namespace: str = "odigos-system"
    """Namespace of the release."""
    mount_method: MountMethod | None = None
    """How agents reach pods; required when enabled because it decides the Karpenter integration:
    k8s-host-path / k8s-csi-driver (startup taint `odigos.io/needs-init` on every NodePool),
    k8s-init-container (no taint), k8s-virtual-device (Odigos' default: a NodeOverlay)."""
    edition: Literal["community", "onprem"] = "community"
    """`onprem` needs the secret config key `karpenter-platform:odigosOnPremToken`
    (`pulumi config set --secret odigosOnPremToken ...`)."""
    odiglet_tolerations: list[Toleration] | None = None
    """Odiglet tolerations; must keep tolerating everything (the chart's default) so it can run on
    nodes that still carry the startup taint."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Further chart values, validated against the chart's values schema."""

    @field_validator("chart_version")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if not re.match(r"^v?\d+\.\d+\.\d+$", value):
            raise ValueError(f"{value!r} is not a pinned chart version (e.g. 1.35.1)")
        return value

    @model_validator(mode="after")
    def _mount_method_explicit(self) -> OdigosConfig:
        if self.enabled and self.mount_method is None:
            raise ValueError(
                "mountMethod is required when Odigos is enabled: k8s-virtual-device, k8s-host-path, "
                "k8s-csi-driver or k8s-init-container"
            )
        return self

    @property
    def needs_startup_taint(self) -> bool:
        return self.enabled and self.mount_method in TAINTING_MOUNT_METHODS
