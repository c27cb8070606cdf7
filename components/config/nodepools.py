"""A team's NodePool, as the team writes it (karpenter.sh/v1 semantics, camelCase keys)."""

from __future__ import annotations

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from .base import Model
from .kube import (
    BudgetDuration,
    BudgetNodes,
    CronSchedule,
    DnsLabel,
    KarpenterDuration,
    LabelKey,
    LabelValue,
    Quantity,
)
from kubefacts.quantity import counted_in_whole_units
from kubefacts.quantity import decimal as parse_quantity

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
PresetName = Literal["general", "spot", "gpu", "batch", "graviton", "multi-zone"]

from kubefacts.labels import (  # noqa: E402
    duplicate_taints,
    int64_value,
    known_values,
    kubelet_refuses,
    restricted_label,
)

from .karpenter_rules import MAX_BUDGETS, MAX_LABELS, MAX_REQUIREMENTS, TEAM_LABEL_KEY, annotations_problem  # noqa: E402
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class Requirement(Model):
    """A node selector requirement with Kubernetes semantics."""

    key: LabelKey
    """Label key, e.g. `karpenter.sh/capacity-type` or `karpenter.k8s.aws/instance-family`."""
    operator: Operator
    """In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte (Gte/Lte: greater/less than or equal)."""
    values: list[LabelValue] = Field(default_factory=list)
    """Values: at least one for In; exactly one non-negative integer for Gt, Lt, Gte and Lte; none for
    Exists and DoesNotExist."""
    min_values: int | None = Field(default=None, ge=1, le=50)
    """Karpenter's minValues: launch only when at least this many distinct values of the key remain
    (flexibility). With In it needs at least that many values; with Exists it counts every value the
    other requirements leave (e.g. `instance-family Exists minValues: 5`)."""

    @field_validator("key")
    @classmethod
    def _key_not_restricted(cls, key: str) -> str:
        reason = restricted_label(key)
        if reason:
            raise ValueError(reason)
        return key

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Requirement:
        op, values = self.operator, self.values
        if op == "In" and not values:
            raise ValueError("operator In needs at least one value")
        if op in ("Gt", "Lt", "Gte", "Lte"):
            if len(values) != 1 or not values[0].isdigit():
                raise ValueError(f"operator {op} takes exactly one non-negative integer value, got {values!r}")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"operator {op} takes no values, got {values!r}")
        # The CRD's rule (and Karpenter's ValidateRequirement) only bounds minValues under In;
        # DoesNotExist leaves no value at all, so minValues there could never be met.
        if self.min_values is not None and op == "In" and len(values) < self.min_values:
            raise ValueError(f"minValues {self.min_values} needs at least that many values with operator In")
        if self.min_values is not None and op == "DoesNotExist":
            raise ValueError("minValues cannot be met with operator DoesNotExist (it leaves no value)")
        return self

    @model_validator(mode="after")
    def _karpenter_accepts(self) -> Requirement:
        problem = (int64_value(self.values[0]) if self.operator in ("Gt", "Lt", "Gte", "Lte") else None) or (
            known_values(self.key, self.values, self.min_values) if self.operator == "In" else None) or (
            kubelet_refuses(self.key) if self.operator == "In" else None)
        if problem:
            raise ValueError(problem)
        return self


class Taint(Model):
    """A Kubernetes node taint."""

    key: LabelKey
    """Taint key (a label key)."""
    value: LabelValue | None = None
    """Optional taint value (a label value)."""
    effect: TaintEffect
    """NoSchedule, PreferNoSchedule or NoExecute."""
    time_added: str | None = None
    """RFC 3339 time the taint was added (Kubernetes sets it for NoExecute taints on nodes; rarely written)."""

    @field_validator("time_added")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is not None and not _RFC3339.match(value):
            raise ValueError(f"{value!r} is not an RFC 3339 date-time (e.g. 2025-01-01T00:00:00Z)")
        return value

    @field_validator("value")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        # The NodePool CRD's taint value pattern needs at least one character; "" means no value.
        return value or None


class Budget(Model):
    """A disruption budget: how many nodes Karpenter may disrupt at once, optionally on a schedule."""

    nodes: BudgetNodes = "10%"
    """A node count (`5`) or a percentage of the pool's nodes (`10%`)."""
    schedule: CronSchedule | None = None
    """Cron schedule (UTC) when the budget starts to apply; needs `duration`. A schedule that can never
    fire (`0 0 31 2 *`) is refused: Karpenter would hold the budget active all the time."""
    duration: BudgetDuration | None = None
    """How long the budget applies after each `schedule` tick, e.g. `8h`; needs `schedule`. At most
    2562047h47m (Go durations are int64 nanoseconds), as for every duration here."""
    reasons: list[DisruptionReason] | None = None
    """Limit the budget to these disruption reasons (Underutilized, Empty, Drifted); all when unset."""

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> Budget:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration must be set together")
        return self

    @field_validator("reasons")
    @classmethod
    def _reasons_unique(cls, reasons: list[str] | None) -> list[str] | None:
        if reasons is not None and len(set(reasons)) != len(reasons):
            raise ValueError(f"reasons {reasons!r} list a reason twice (the NodePool CRD refuses duplicates)")
        return reasons


class Disruption(Model):
    """When Karpenter may remove or replace this pool's nodes."""

    consolidation_policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
    """WhenEmpty; WhenEmptyOrUnderutilized (also replaces under-used nodes with cheaper ones); or
    Balanced (consolidates only when the saving is worth the disruption)."""
    consolidate_after: KarpenterDuration = "0s"
    """How long a node must be consolidatable before Karpenter acts, e.g. `30s`, `10m`, or `Never`.
    The default is the CRD's (`0s`), so a pool that omits it behaves as it does in Karpenter; the
    presets set their own."""
    budgets: list[Budget] = Field(default_factory=lambda: [Budget()], max_length=MAX_BUDGETS)
    """Disruption budgets; the most restrictive active one wins."""


class NodePool(Model):
    """One NodePool of a team. The rendered NodePool is named `<team>-<name>`."""

    name: DnsLabel
    """Pool name, unique within the team."""
    preset: Annotated[list[PresetName], BeforeValidator(lambda v: [v] if isinstance(v, str) else v)] = Field(
        default_factory=list
    )
    """Preset(s) from the Karpenter docs expanded under this pool's own settings: general, spot, gpu,
    batch, graviton, multi-zone. Several are merged in order; the pool's own keys win."""
    node_class: DnsLabel = "default"
    """Name of an EC2NodeClass defined in the stack's `nodeClasses`."""
    requirements: list[Requirement] = Field(default_factory=list)
    """Scheduling requirements on well-known or pool labels."""
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Labels put on every node of the pool (the team label is added for you)."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Annotations put on every node of the pool."""
    taints: list[Taint] = Field(default_factory=list)
    """Taints pods must tolerate to land on the pool's nodes."""
    startup_taints: list[Taint] = Field(default_factory=list)
    """Taints a node starts with and that an agent removes (pods need not tolerate them)."""
    replicas: int | None = Field(default=None, ge=0)
    """A static NodePool: keep exactly this many nodes, whatever the pods need (Karpenter's static
    provisioning). Only `limits.nodes` (at least `replicas`) and no `weight` then; cannot be switched on
    or off later. Needs `karpenter.featureGates.staticCapacity: true` in the stack."""
    limits: dict[str, Quantity] | None = Field(default=None, validate_default=True)
    """Upper bound on the pool's total capacity, e.g. `{cpu: "200", memory: 800Gi}`, or a node
    count `{nodes: "10"}`. Required for dynamic pools; a static pool may set only `nodes`. Extended
    resources (`nvidia.com/gpu`) in whole units, as Kubernetes counts them."""
    weight: int | None = Field(default=None, ge=1, le=100)
    """Priority among pools (higher is tried first), 1-100; unset counts as 0. Not on static pools."""
    disruption: Disruption = Field(default_factory=Disruption)
    """Consolidation policy, delay and budgets."""
    expire_after: KarpenterDuration = "720h"
    """Maximum node lifetime before replacement, or `Never`."""
    termination_grace_period: KarpenterDuration | None = None
    """How long Karpenter waits for a draining node before forcing it away."""
    largest_pod: dict[str, Quantity] | None = None
    """The largest pod the team will run here (requests, e.g. `{cpu: "8", memory: 32Gi}`); policies
    check that the pool's requirements leave an instance type that fits it."""

    @field_validator("labels")
    @classmethod
    def _labels_not_restricted(cls, labels: dict[str, str]) -> dict[str, str]:
        for key in labels:
            reason = restricted_label(key)
            if key == TEAM_LABEL_KEY:
                reason = f"{TEAM_LABEL_KEY} is set for you from the team file's name"
            if reason:
                raise ValueError(f"label {key!r}: {reason}")
        return labels

    @field_validator("termination_grace_period")
    @classmethod
    def _grace_period_finite(cls, value: str | None) -> str | None:
        if value == "Never":
            raise ValueError("terminationGracePeriod cannot be Never; leave it unset to wait for pods indefinitely")
        return value

    @field_validator("limits")
    @classmethod
    def _limits_fit_mode(cls, limits: dict[str, str] | None, info: ValidationInfo) -> dict[str, str] | None:
        static = info.data.get("replicas") is not None
        if static:
            # The NodePool CRD: "only 'limits.nodes' is supported on static NodePools".
            extra = sorted(set(limits or {}) - {"nodes"})
            if extra:
                raise ValueError(f"a static NodePool (replicas set) may only limit nodes, not {', '.join(extra)}")
            replicas = info.data["replicas"]
            # Karpenter's static provisioning never launches past limits.nodes: the pool would stay short.
            if limits and "nodes" in limits and parse_quantity(limits["nodes"]) < replicas:
                raise ValueError(f"nodes {limits['nodes']} is below replicas {replicas}: Karpenter caps a static NodePool "
                                 f"at limits.nodes, so it would keep {limits['nodes']} node(s), not {replicas}; raise "
                                 "limits.nodes or lower replicas")
            return limits
        if limits is None:
            raise ValueError("required key missing: a NodePool needs limits (e.g. cpu and memory) so a runaway "
                             "workload cannot buy unbounded capacity")
        if not limits:
            raise ValueError("a NodePool needs limits (e.g. cpu and memory) so a runaway workload cannot buy unbounded capacity")
        return limits

    @field_validator("limits", "largest_pod")
    @classmethod
    def _extended_resources_whole(cls, resources: dict[str, str] | None) -> dict[str, str] | None:
        # Kubernetes refuses `nvidia.com/gpu: "0.5"` in a pod (ValidateResourceQuantityValue), so a
        # fractional limit or largest pod of an extended resource describes nothing that can run.
        for name, value in (resources or {}).items():
            fraction = parse_quantity(value) % 1
            if fraction and counted_in_whole_units(name):
                raise ValueError(f"{name}: {value!r} must be an integer ({name} is an extended resource, "
                                 "counted in whole units)")
        return resources

    @model_validator(mode="after")
    def _static_without_weight(self) -> NodePool:
        if self.replicas is not None and self.weight is not None:
            raise ValueError("weight is not supported on static NodePools (replicas set)")
        return self

    # Karpenter's runtime validation and the NodePool CRD's caps (karpenter_rules).
    @field_validator("requirements")
    @classmethod
    def _requirements_capped(cls, requirements: list[Requirement]) -> list[Requirement]:
        if len(requirements) > MAX_REQUIREMENTS:
            raise ValueError(f"{len(requirements)} requirements; the NodePool CRD allows at most {MAX_REQUIREMENTS}")
        return requirements

    @field_validator("labels")
    @classmethod
    def _labels_capped(cls, labels: dict[str, str]) -> dict[str, str]:
        if len(labels) + 1 > MAX_LABELS:  # + the team label the stack adds
            raise ValueError(f"{len(labels)} labels plus the team label; the NodePool CRD allows at most {MAX_LABELS}")
        for key in labels:
            problem = kubelet_refuses(key)
            if problem:
                raise ValueError(problem)
        return labels

    @field_validator("annotations")
    @classmethod
    def _annotations_valid(cls, annotations: dict[str, str]) -> dict[str, str]:
        problem = annotations_problem(annotations)
        if problem:
            raise ValueError(problem)
        return annotations

    @model_validator(mode="after")
    def _taints_unique(self) -> NodePool:
        duplicates = duplicate_taints([(t.key, t.effect) for t in self.taints],
                                      [(t.key, t.effect) for t in self.startup_taints])
        if duplicates:
            raise ValueError(f"taint {', '.join(duplicates)} appears twice across taints and startupTaints "
                             "(Karpenter refuses duplicate key/effect pairs)")
        return self
