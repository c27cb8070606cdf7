"""NodePool policies: what a team may change, judged before it reaches the cluster."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterable, Mapping

from kubefacts.duration import karpenter_seconds
from kubefacts.platform import largest_pod_requests
from kubefacts.quantity import decimal, show

# The program's own names for what it puts on NodePools (plain constants, no Pulumi import).
from components.config.odigos import NEEDS_INIT_TAINT as ODIGOS_TAINT
from components.config.odigos import TAINTING_MOUNT_METHODS
from components.config.teams import ALLOW_SPOT_ANNOTATION, LARGEST_POD_ANNOTATION, TEAM_LABEL

from . import catalog, levels
from .helm import karpenter_version, releases
from .model import HELM_RELEASE, NODECLASS, NODEPOOL, UNKNOWN, Resource, Stack, Violation, contains_unknown
from .registry import policy

CAPACITY_TYPE = "karpenter.sh/capacity-type"
NEVER_REMOVED_MOUNT_METHODS = ("k8s-init-container",)
REPELLING_EFFECTS = ("NoSchedule", "NoExecute")


def _pools(stack: Stack) -> list[Resource]:
    return stack.of_type(NODEPOOL)


def _template(pool: Resource, *path: str, default: Any = None) -> Any:
    return pool.prop("spec", "template", "spec", *path, default=default)


def _known_requirements(pool: Resource) -> list[Mapping[str, Any]] | None:
    """The pool's requirements, or None when any part is not known yet (or malformed)."""
    requirements = _template(pool, "requirements", default=[])
    if contains_unknown(requirements) or not isinstance(requirements, list):
        return None
    return [r for r in requirements if isinstance(r, Mapping)]


def _node_class(stack: Stack, pool: Resource) -> Resource | None:
    name = _template(pool, "nodeClassRef", "name")
    return next((c for c in stack.of_type(NODECLASS) if c.prop("metadata", "name") == name), None)


_NODECLASS_FIELDS = ("amiFamily", "amiSelectorTerms", "kubelet", "blockDeviceMappings", "instanceStorePolicy")


def _pool_types(stack: Stack, pool: Resource) -> catalog.PoolTypes | None:
    """Candidate instance types (None: not known yet). Raises catalog.InvalidObject."""
    template = {"nodeClassRef": _template(pool, "nodeClassRef"), "requirements": _template(pool, "requirements", default=[])}
    node_class = _node_class(stack, pool)
    class_spec = {k: node_class.prop("spec", k) for k in _NODECLASS_FIELDS if node_class.prop("spec", k) is not None} \
        if node_class is not None else None
    if contains_unknown(template) or contains_unknown(class_spec) or contains_unknown(pool.prop("metadata", "name")):
        return None
    whole_class = None if node_class is None else node_class.props
    if not contains_unknown(pool.props) and not contains_unknown(whole_class):
        # the whole objects, as the API server and Karpenter of the pinned release see them
        catalog.judge(pool.props, whole_class, release=karpenter_version(stack))
    pool_object = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool.prop("metadata", "name")},
                   "spec": {"template": {"spec": template}}}
    class_object = None if node_class is None else {
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": node_class.prop("metadata", "name")}, "spec": class_spec}
    return catalog.pool_types(pool_object, class_object)


def _valid_pool_types(stack: Stack, pool: Resource) -> catalog.PoolTypes | None:
    """_pool_types for the checks that judge a valid pool: None for an invalid one too
    (nodepool-has-instance-types says why)."""
    try:
        return _pool_types(stack, pool)
    except catalog.InvalidObject:
        return None


def _annotated(stack: Stack, key: str) -> Iterable[tuple[Resource, Any]]:
    """(pool, value) for each NodePool whose annotation `key` is set and known."""
    for pool in _pools(stack):
        value = pool.prop("metadata", "annotations", key)
        if value is not None and value is not UNKNOWN:
            yield pool, value


# --- limits ------------------------------------------------------------------------------------

@policy(
    "nodepool-limits-within-ceiling",
    """Every NodePool declares spec.limits for cpu and memory, each at or below the environment's
    ceiling: limits are the only brake on what a runaway workload (or a typo in a team file) can
    buy, so a pool without them, or with limits above what the environment is budgeted for, is
    refused. A static NodePool (spec.replicas) is bounded by its replica count and may only limit
    nodes (the CRD's rule), so only the ceilings apply to it.""",
    schema={
        "ceilings": {"type": "object", "additionalProperties": {"type": ["string", "number"]},
                     "description": "Largest limit per resource for one NodePool, e.g. {\"cpu\": \"512\", \"memory\": \"4Ti\"}."},
        "required": {"type": "array", "items": {"type": "string"},
                     "description": "Resources every NodePool must limit."},
    },
    defaults=lambda environment: {"ceilings": levels.ceilings(environment), "required": ["cpu", "memory"]},
    group="NodePool",
)
def limits_within_ceiling(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    ceilings = {name: decimal(value) for name, value in (config.get("ceilings") or {}).items()}
    for pool in _pools(stack):
        limits = pool.prop("spec", "limits")
        if limits is UNKNOWN:
            continue
        replicas = pool.prop("spec", "replicas")
        # The engine hands numbers over as floats.
        static = isinstance(replicas, (int, float)) and not isinstance(replicas, bool)
        if static:
            limits = limits if isinstance(limits, Mapping) else {}
        elif not isinstance(limits, Mapping) or not limits:
            yield Violation(pool.urn, f"{pool.label} has no spec.limits; declare at least "
                                      f"{', '.join(config.get('required') or ['cpu', 'memory'])}")
            continue
        for name in [] if static else config.get("required") or []:
            if name not in limits:
                yield Violation(pool.urn, f"{pool.label} does not limit {name} (spec.limits has {', '.join(sorted(limits))})")
        for name, value in sorted(limits.items()):
            if value is UNKNOWN:
                continue
            try:
                amount = decimal(value)
            except ValueError:
                yield Violation(pool.urn, f"{pool.label} limit {name}={value!r} is not a Kubernetes quantity")
                continue
            if name in ceilings and amount > ceilings[name]:
                yield Violation(pool.urn, f"{pool.label} limit {name}={value} is above the "
                                          f"{stack.environment or 'default'} ceiling of {show(name, ceilings[name])}")


# --- instance types ----------------------------------------------------------------------------

@policy(
    "nodepool-has-instance-types",
    """A NodePool's requirements must leave at least one instance type of the EC2 catalog (and
    enough distinct values for every minValues): otherwise Karpenter can never launch a node for
    it and pods wait forever, with the error only visible in controller logs.""",
    schema={"minInstanceTypes": {"type": "integer", "minimum": 1,
                                 "description": "Fewest catalog instance types a pool must admit."}},
    defaults=lambda environment: {"minInstanceTypes": 1},
    group="NodePool",
)
def has_instance_types(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    minimum = int(config.get("minInstanceTypes") or 1)
    for pool in _pools(stack):
        try:
            types = _pool_types(stack, pool)
        except catalog.InvalidObject as err:
            yield Violation(pool.urn, f"{pool.label} is not a valid Karpenter NodePool: {err}")
            continue
        if types is None:
            continue
        count = len(types.candidates)
        if count < minimum:
            requirements = _known_requirements(pool) or []
            constraints = "; ".join(_describe(r) for r in requirements)
            unknown = "".join(f" ({hint})" for hint in catalog.unknown_names(requirements))
            yield Violation(pool.urn, f"{pool.label} admits {count} instance type(s) of the catalog "
                                      f"(at least {minimum} needed): {constraints or 'no requirements'}{unknown}")
        elif types.min_values_error:
            yield Violation(pool.urn, f"{pool.label}: {types.min_values_error} among its {count} instance types")


def _describe(requirement: Mapping[str, Any]) -> str:
    values = requirement.get("values") or []
    return f"{requirement.get('key')} {requirement.get('operator')} {list(values) if values else ''}".strip()


@policy(
    "nodepool-fits-largest-pod",
    f"""When a NodePool declares the largest pod its team runs (annotation {LARGEST_POD_ANNOTATION},
    JSON requests such as {{"cpu": "4", "memory": "8Gi"}}), at least one instance type its
    requirements admit must be able to hold that pod after kubelet and system reservations:
    otherwise the pod stays Pending although the pool looks right.""",
    group="NodePool",
)
def fits_largest_pod(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for pool, raw in _annotated(stack, LARGEST_POD_ANNOTATION):
        try:
            requests = largest_pod_requests(raw)
            wanted = {name: decimal(value) for name, value in requests.items()}
        except ValueError:
            yield Violation(pool.urn, f"{pool.label} annotation {LARGEST_POD_ANNOTATION}={raw!r} is not a JSON "
                                      "object of resource quantities (e.g. {\"cpu\": \"4\", \"memory\": \"8Gi\"})")
            continue
        types = _valid_pool_types(stack, pool)
        if types is None or not types.candidates:
            continue
        judged = catalog.largest_pod_judged(wanted)
        best, best_short = None, None
        for candidate in types.candidates:
            short = catalog.largest_pod_shortfall(wanted, candidate)
            if not short:
                break
            if best_short is None or len(short) < best_short or (len(short) == best_short and _bigger(candidate, best)):
                best, best_short = candidate, len(short)
        else:
            asked = ", ".join(f"{name}={value}" for name, value in requests.items())
            detail = ""
            if best is not None:
                detail = f"; closest is {best.name} with " + ", ".join(
                    f"{n} {show(n, best.allocatable.get(n, Decimal(0)))}" for n in judged)
            yield Violation(pool.urn, f"{pool.label}: none of the {len(types.candidates)} admitted instance types "
                                      f"can hold the declared largest pod ({asked}){detail}")


def _bigger(candidate: catalog.Candidate, current: catalog.Candidate | None) -> bool:
    if current is None:
        return True
    def size(c: catalog.Candidate) -> tuple[Decimal, Decimal]:
        return c.allocatable.get("cpu", Decimal(0)), c.allocatable.get("memory", Decimal(0))
    return size(candidate) > size(current)


@policy(
    "nodepool-gpu-tainted",
    """A NodePool whose requirements admit GPU or accelerator instance types (GPUs, Inferentia,
    Trainium, Gaudi) must carry a NoSchedule (or NoExecute) taint: without it Karpenter may put
    ordinary pods on the most expensive nodes in the catalog, and keep them there.""",
    group="NodePool",
)
def gpu_tainted(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for pool in _pools(stack):
        taints = _template(pool, "taints", default=[])
        types = _valid_pool_types(stack, pool)
        if types is None or contains_unknown(taints):
            continue
        accelerated = [c for c in types.candidates if c.accelerated]
        if not accelerated:
            continue
        if any(isinstance(t, Mapping) and t.get("effect") in REPELLING_EFFECTS for t in taints or []):
            continue
        yield Violation(pool.urn, f"{pool.label} admits {len(accelerated)} GPU/accelerator instance types "
                                  f"({catalog.short_list(accelerated)}) but has no NoSchedule taint; add one "
                                  "(e.g. nvidia.com/gpu=true:NoSchedule) or exclude them with requirements")


# --- disruption and lifetime -------------------------------------------------------------------

@policy(
    "nodepool-disruption-budgets",
    """Every NodePool states spec.disruption.budgets with at least one always-active budget below
    100%: consolidation, drift and expiry otherwise may replace every node of the pool at once,
    which takes a service down in production.""",
    group="NodePool",
)
def disruption_budgets(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for pool in _pools(stack):
        budgets = pool.prop("spec", "disruption", "budgets")
        if contains_unknown(budgets):
            continue
        if not isinstance(budgets, list) or not budgets:
            yield Violation(pool.urn, f"{pool.label} has no spec.disruption.budgets; add e.g. {{nodes: \"10%\"}}")
            continue
        limiting = [b for b in budgets if isinstance(b, Mapping) and not b.get("schedule")
                    and str(b.get("nodes", "10%")).strip() != "100%"]
        if not limiting:
            yield Violation(pool.urn, f"{pool.label} has no always-active budget below 100% "
                                      "(only scheduled or 100% budgets); add one such as {nodes: \"10%\"}")


@policy(
    "nodepool-expire-after-set",
    """Every NodePool sets spec.template.spec.expireAfter explicitly (and within the optional
    maximum): node lifetime decides how fast AMI and kernel fixes reach running nodes, so it is a
    deliberate choice per pool, not an inherited default.""",
    schema={
        "maxExpireAfter": {"type": ["string", "null"], "description": "Longest expireAfter allowed, e.g. \"2160h\"; null for no maximum."},
        "allowNever": {"type": "boolean", "description": "Whether expireAfter: Never is accepted."},
    },
    defaults=lambda environment: {"maxExpireAfter": None, "allowNever": True},
    group="NodePool",
)
def expire_after_set(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    maximum = config.get("maxExpireAfter")
    max_seconds = karpenter_seconds(maximum) if maximum else None
    for pool in _pools(stack):
        value = _template(pool, "expireAfter")
        if value is UNKNOWN:
            continue
        if value is None or value == "":
            yield Violation(pool.urn, f"{pool.label} does not set spec.template.spec.expireAfter (e.g. 720h)")
            continue
        try:
            seconds = karpenter_seconds(str(value))
        except ValueError as err:
            yield Violation(pool.urn, f"{pool.label}: {err}")
            continue
        if seconds is None and not config.get("allowNever", True):
            yield Violation(pool.urn, f"{pool.label} sets expireAfter: Never, which this environment does not allow")
        elif seconds is not None and max_seconds is not None and seconds > max_seconds:
            yield Violation(pool.urn, f"{pool.label} expireAfter {value} is longer than the maximum {maximum}")


# --- spot --------------------------------------------------------------------------------------

def _admits(pool: Resource, key: str, value: str, default: bool) -> bool | None:
    """Whether the pool's requirements on `key` admit `value` (None: not known yet)."""
    requirements = _known_requirements(pool)
    if requirements is None:
        return None
    return catalog.admits_value(requirements, key, value, default)


@policy(
    "nodepool-spot-allowed",
    f"""A NodePool may admit spot capacity only when its team allows it (annotation
    {ALLOW_SPOT_ANNOTATION}, from the team's allowSpot): spot nodes can be reclaimed with two
    minutes' notice, which teams with long, non-checkpointed jobs have opted out of.""",
    group="NodePool",
)
def spot_allowed(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for pool, allowed in _annotated(stack, ALLOW_SPOT_ANNOTATION):
        if str(allowed).lower() not in ("true", "false"):
            yield Violation(pool.urn, f"{pool.label} annotation {ALLOW_SPOT_ANNOTATION}={allowed!r} must be \"true\" or \"false\"")
            continue
        # Karpenter launches on-demand only when a pool does not mention the capacity type.
        if str(allowed).lower() == "false" and _admits(pool, CAPACITY_TYPE, "spot", default=False):
            yield Violation(pool.urn, f"{pool.label} admits spot capacity ({CAPACITY_TYPE}) but its team does "
                                      "not allow spot (allowSpot: false); require on-demand")


# --- Odigos ------------------------------------------------------------------------------------

def odigos_release(stack: Stack) -> Resource | None:
    found = releases(stack, "odigos")
    return found[0] if found else None


@policy(
    "nodepool-odigos-startup-taint",
    f"""When Odigos is installed with a mount method that needs the node prepared first
    (k8s-host-path, k8s-csi-driver) every NodePool must start its nodes with the startup taint
    {ODIGOS_TAINT}:NoSchedule, which odiglet removes once the node is ready (and the odigos
    release must set karpenter.enabled: true); when Odigos is not installed or uses
    k8s-init-container nothing removes that taint, so no pool may carry it (its nodes would never
    take pods).""",
    group="NodePool",
)
def odigos_startup_taint(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    release = odigos_release(stack)
    required = forbidden = False
    reason = ""
    if release is None:
        if any(r.prop("chart") is UNKNOWN for r in stack.of_type(HELM_RELEASE)):
            return  # a release whose chart is not known yet may be Odigos
        forbidden, reason = True, "Odigos is not installed in this stack"
    else:
        mount_method = release.prop("values", "instrumentor", "mountMethod")
        karpenter_enabled = release.prop("values", "karpenter", "enabled")
        if mount_method is UNKNOWN:
            return
        if mount_method in TAINTING_MOUNT_METHODS:
            required, reason = True, f"Odigos mount method {mount_method}"
            if karpenter_enabled is not UNKNOWN and karpenter_enabled is not True:
                yield Violation(release.urn, f"odigos release uses mount method {mount_method} on Karpenter nodes "
                                             "but does not set karpenter.enabled: true")
        elif mount_method in NEVER_REMOVED_MOUNT_METHODS:
            forbidden, reason = True, f"Odigos mount method {mount_method} never removes it"
    if not (required or forbidden):
        return
    for pool in _pools(stack):
        taints = _template(pool, "startupTaints", default=[])
        if contains_unknown(taints):
            continue
        has = any(isinstance(t, Mapping) and t.get("key") == ODIGOS_TAINT and t.get("effect", "NoSchedule") == "NoSchedule"
                  for t in taints or [])
        if required and not has:
            yield Violation(pool.urn, f"{pool.label} lacks startup taint {ODIGOS_TAINT}:NoSchedule ({reason}): "
                                      "pods could start before odiglet prepared the node")
        elif forbidden and any(isinstance(t, Mapping) and t.get("key") == ODIGOS_TAINT for t in taints or []):
            yield Violation(pool.urn, f"{pool.label} carries startup taint {ODIGOS_TAINT} but {reason}: "
                                      "nothing will remove it and the pool's nodes would never take pods")


# --- ownership ---------------------------------------------------------------------------------

@policy(
    "nodepool-team-ownership",
    f"""Every NodePool names its owning team with label {TEAM_LABEL} (on the NodePool and on its
    nodes) and is named <team>-<pool>: cost reports, alerts and the team-scoped policies above
    all key off it, and a pool without an owner is one nobody answers for.""",
    group="NodePool",
)
def team_ownership(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for pool in _pools(stack):
        team = pool.prop("metadata", "labels", TEAM_LABEL)
        name = pool.prop("metadata", "name")
        node_team = pool.prop("spec", "template", "metadata", "labels", TEAM_LABEL)
        if any(v is UNKNOWN for v in (team, name, node_team)):
            continue
        if not isinstance(team, str) or not team:
            yield Violation(pool.urn, f"{pool.label} has no {TEAM_LABEL} label")
            continue
        if isinstance(name, str) and not name.startswith(f"{team}-"):
            yield Violation(pool.urn, f"{pool.label} belongs to team {team!r} but is not named {team}-<pool>")
        if node_team != team:
            yield Violation(pool.urn, f"{pool.label}: its nodes' {TEAM_LABEL} label is {node_team!r}, not {team!r}")
