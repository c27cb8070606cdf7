"""Odigos (eBPF auto-instrumentation) and its Karpenter integration."""

from __future__ import annotations

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .base import Model
from .errors import ConfigIssue
from .kube import DnsLabel

if TYPE_CHECKING:
    from .stack import StackSettings
    from .teams import Team

MountMethod = Literal["k8s-virtual-device", "k8s-host-path", "k8s-csi-driver", "k8s-init-container"]

# Mount methods whose agent files come from odiglet on the node: a pod must not start on a node
# before odiglet prepared it, so NodePools carry a startup taint that odiglet removes.
TAINTING_MOUNT_METHODS = ("k8s-host-path", "k8s-csi-driver")
NEEDS_INIT_TAINT = "odigos.io/needs-init"
NEEDS_INIT_EFFECT = "NoSchedule"
# Values the integration derives from typed config; setting them in `values` is refused so the
# chart and the NodePools can never disagree.
_CONTROLLED_VALUES = {
    ("instrumentor", "mountMethod"): "set odigos.mountMethod instead",
    ("karpenter", "enabled"): "it follows odigos.mountMethod (true for k8s-host-path and k8s-csi-driver)",
    ("onPremToken",): "use edition: onprem and the secret `pulumi config set --secret odigosOnPremToken ...`",
}
_IMAGE_PINNED = re.compile(r"^[^\s@]+(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$")


class Toleration(Model):
    """A Kubernetes toleration."""

    key: str | None = None
    """Taint key; unset with `Exists` tolerates every taint."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """`Exists` (any value) or `Equal` (the given value)."""
    value: str | None = None
    """Taint value for `Equal`."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """Tolerated effect; unset tolerates every effect."""
    toleration_seconds: int | None = None
    """For NoExecute: how long the pod stays once tainted."""

    def tolerates(self, key: str, effect: str, value: str = "") -> bool:
        """Kubernetes' matching rule (k8s.io/api/core/v1 Toleration.ToleratesTaint)."""
        if self.effect is not None and self.effect != effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == key
        return self.key == key and (self.value or "") == value


class OdigosConfig(Model):
    """Odigos, installed from its helm chart with the Karpenter integration."""

    enabled: bool = False
    """Install Odigos."""
    chart_version: str = "1.35.1"
    """Exact odigos chart version (no ranges)."""
    namespace: DnsLabel = "odigos-system"
    """Namespace of the release (created and, on destroy, deleted by the stack)."""
    mount_method: MountMethod | None = None
    """How agents reach pods; required when enabled because it decides the Karpenter integration:
    k8s-host-path / k8s-csi-driver (startup taint `odigos.io/needs-init` on every NodePool, existing
    nodes tainted once, odiglet restarted), k8s-init-container (no taint), k8s-virtual-device
    (Odigos' default: Karpenter's nodeOverlay gate and a NodeOverlay)."""
    edition: Literal["community", "onprem"] = "community"
    """`onprem` needs the secret config key `karpenter-platform:odigosOnPremToken`
    (`pulumi config set --secret odigosOnPremToken ...`); it reaches the chart as `onPremToken`."""
    odiglet_tolerations: list[Toleration] | None = None
    """Odiglet tolerations (the chart default tolerates every taint). They must still tolerate
    `odigos.io/needs-init:NoSchedule` and every taint of the stack's NodePools: odiglet is what
    removes the startup taint, and it must run on every node instrumented pods can land on."""
    node_overlay_capacity: int = Field(default=1024, ge=1, le=1_000_000)
    """k8s-virtual-device: `instrumentation.odigos.io/generic` capacity the NodeOverlay tells
    Karpenter each node will have; 1024 is what odiglet's device plugin advertises per node."""
    prepare_image: str = "registry.k8s.io/kubectl:v1.34.1"
    """k8s-host-path / k8s-csi-driver: image of the one-off Job tainting existing nodes, used while
    the provisioner is disabled (it then runs `kubectl taint`); with the provisioner enabled its
    own image runs `provisioner odigos-prepare-nodes`. Pin a tag or a digest."""
    prepare_node_selector: str = "kubernetes.io/os=linux,eks.amazonaws.com/compute-type!=fargate"
    """Label selector of the existing nodes the Job taints: nodes where odiglet runs (it removes
    the taint). Narrow it to `!odigos.io/odiglet-oss-installed` to taint only nodes odiglet never
    prepared."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Further chart values, validated against the chart's values schema (in tests and the
    offline render; helm validates it again on install)."""

    @field_validator("chart_version")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if not re.match(r"^v?\d+\.\d+\.\d+$", value):
            raise ValueError(f"{value!r} is not a pinned chart version (e.g. 1.35.1)")
        return value

    @field_validator("prepare_image")
    @classmethod
    def _image_pinned(cls, value: str) -> str:
        last = value.rsplit("/", 1)[-1]
        if not _IMAGE_PINNED.match(value) or (":" not in last and "@" not in last) or last.endswith(":latest"):
            raise ValueError(f"{value!r} is not a pinned image reference (repository:tag or @sha256:<digest>, not latest)")
        return value

    @field_validator("prepare_node_selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        term = re.compile(r"^!?[A-Za-z0-9./_-]+((=|==|!=)[A-Za-z0-9._-]*)?$")
        if not value or not all(term.match(t.strip()) for t in value.split(",")):
            raise ValueError(f"{value!r} is not a label selector (e.g. kubernetes.io/os=linux,!odigos.io/odiglet-oss-installed)")
        return value

    @model_validator(mode="after")
    def _mount_method_explicit(self) -> OdigosConfig:
        if self.enabled and self.mount_method is None:
            raise ValueError(
                "mountMethod is required when Odigos is enabled: k8s-virtual-device, k8s-host-path, "
                "k8s-csi-driver or k8s-init-container"
            )
        return self

    @model_validator(mode="after")
    def _integration_values_not_overridden(self) -> OdigosConfig:
        for path, hint in _CONTROLLED_VALUES.items():
            node: Any = self.values
            for part in path:
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                raise ValueError(f"values.{'.'.join(path)} is set by the stack: {hint}")
        return self

    @model_validator(mode="after")
    def _odiglet_keeps_tolerating_the_taint(self) -> OdigosConfig:
        odiglet = self.values.get("odiglet")
        if isinstance(odiglet, dict) and "tolerations" in odiglet and self.odiglet_tolerations is not None:
            raise ValueError("odiglet tolerations are set twice (odigletTolerations and values.odiglet.tolerations); keep one")
        where = "odigletTolerations" if self.odiglet_tolerations is not None else "values.odiglet.tolerations"
        tolerations = self.effective_odiglet_tolerations()
        if tolerations is not None and not any(t.tolerates(NEEDS_INIT_TAINT, NEEDS_INIT_EFFECT) for t in tolerations):
            raise ValueError(
                f"{where} no longer tolerate {NEEDS_INIT_TAINT}:{NEEDS_INIT_EFFECT}; odiglet removes that taint, so it "
                "must run on tainted nodes (add {key: odigos.io/needs-init, operator: Exists} or keep the default "
                "[{operator: Exists}])"
            )
        return self

    def effective_odiglet_tolerations(self) -> list[Toleration] | None:
        """The tolerations odiglet gets, or None for the chart default (tolerate everything)."""
        if self.odiglet_tolerations is not None:
            return list(self.odiglet_tolerations)
        odiglet = self.values.get("odiglet")
        raw = odiglet.get("tolerations") if isinstance(odiglet, dict) else None
        if raw is None:
            return None
        if not isinstance(raw, list):  # `tolerations: 5` would otherwise be iterated (a TypeError, a traceback)
            raise ValueError(f"values.odiglet.tolerations: expected a list of tolerations, got {raw!r:.80}")
        try:
            return [Toleration.model_validate(t) for t in raw]
        except ValidationError as err:
            raise ValueError(f"values.odiglet.tolerations: {err.errors()[0]['msg']}") from None

    @property
    def needs_startup_taint(self) -> bool:
        return self.enabled and self.mount_method in TAINTING_MOUNT_METHODS

    @property
    def needs_node_overlay(self) -> bool:
        """k8s-virtual-device: Karpenter must know nodes will offer the Odigos device."""
        return self.enabled and self.mount_method == "k8s-virtual-device"


def odigos_cross_checks(settings: StackSettings, teams: list[Team], *, token_configured: bool,
                        stack_file: str) -> list[ConfigIssue]:
    """Checks that need the whole stack: the token, the feature gate, odiglet on every pool."""
    odigos = settings.odigos
    if not odigos.enabled:
        return []
    issues: list[ConfigIssue] = []
    stack = stack_file
    if odigos.edition == "onprem" and not token_configured:
        issues.append(ConfigIssue(stack, "karpenter-platform:odigos.edition",
                                  "onprem needs the secret odigosOnPremToken: run `pulumi config set --secret odigosOnPremToken ...`"))
    if odigos.needs_node_overlay and settings.karpenter.feature_gates.node_overlay is False:
        issues.append(ConfigIssue(stack, "karpenter-platform:karpenter.featureGates.nodeOverlay",
                                  "is false, but odigos.mountMethod k8s-virtual-device needs it (leave it unset: it is turned on for you)"))
    tolerations = odigos.effective_odiglet_tolerations()
    if tolerations is None:
        return issues
    for team in teams:
        for index, pool in enumerate(team.node_pools):
            for t_index, taint in enumerate(pool.taints):
                if taint.effect != "PreferNoSchedule" and not any(t.tolerates(taint.key, taint.effect, taint.value or "") for t in tolerations):
                    issues.append(ConfigIssue(
                        f"stacks/teams/{team.name}.yaml", f"nodePools[{index}].taints[{t_index}]",
                        f"odiglet does not tolerate {taint.key}:{taint.effect} (odigos odiglet tolerations): it would not run on "
                        "this pool's nodes, so instrumented pods could not start there"))
    return issues
