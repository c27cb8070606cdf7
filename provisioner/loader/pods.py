"""Pods, controllers and DaemonSets: object dicts to PodSpec/Pod/DaemonSet models."""
from __future__ import annotations

import json

from ..models import ALL_NAMESPACES, DaemonSet, LabelSelector, Pod, PodAffinityTerm, PodSpec, TopologySpreadConstraint
from ..scheduling.resources import pod_requests
from ..scheduling.taints import HostPort, Toleration
from .fields import Ctx

SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
# The DaemonSet controller adds these tolerations to every daemon pod.
DAEMON_TOLERATIONS = tuple(Toleration(key, "Exists", "", effect) for key, effect in (
    ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
))
CONTROLLER_KINDS = {"Deployment": "apps", "ReplicaSet": "apps", "StatefulSet": "apps", "Job": "batch",
                    "ReplicationController": ""}


def label_selector(ctx: Ctx, value, path: str) -> LabelSelector:
    if value is None:
        return LabelSelector(nothing=True)
    value = ctx.mapping(value, path)
    labels = tuple(sorted(ctx.string_map(value.get("matchLabels"), f"{path}.matchLabels").items()))
    expressions = []
    for i, expr in enumerate(ctx.sequence(value.get("matchExpressions"), f"{path}.matchExpressions")):
        expr_path = f"{path}.matchExpressions[{i}]"
        expr = ctx.mapping(expr, expr_path)
        operator = ctx.string(expr.get("operator"), f"{expr_path}.operator")
        if operator not in SELECTOR_OPERATORS:
            raise ctx.error(f"{expr_path}.operator", f"unknown operator {operator!r} (expected one of "
                            f"{', '.join(sorted(SELECTOR_OPERATORS))})")
        values = frozenset(ctx.string(v, f"{expr_path}.values") for v in ctx.sequence(expr.get("values"), f"{expr_path}.values"))
        expressions.append((ctx.string(expr.get("key"), f"{expr_path}.key"), operator, values))
    return LabelSelector(labels, tuple(sorted(expressions, key=repr)))


def _namespaces(ctx: Ctx, term: dict, path: str, namespace: str, namespace_labels: dict):
    names = frozenset(ctx.string(n, f"{path}.namespaces") for n in ctx.sequence(term.get("namespaces"), f"{path}.namespaces"))
    raw_selector = term.get("namespaceSelector")
    if raw_selector is None:
        return names or frozenset({namespace})
    selector = label_selector(ctx, raw_selector, f"{path}.namespaceSelector")
    if not selector.match_labels and not selector.match_expressions:
        return ALL_NAMESPACES  # an empty selector matches every namespace
    selected = {name for name, labels in namespace_labels.items()
                if selector.matches({**labels, "kubernetes.io/metadata.name": name})}
    if selector.matches({"kubernetes.io/metadata.name": namespace}):
        selected.add(namespace)
    return frozenset(selected | names)


def _affinity_terms(ctx, value, path, namespace, namespace_labels, weighted: bool) -> tuple:
    out = []
    for i, item in enumerate(ctx.sequence(value, path)):
        item_path = f"{path}[{i}]"
        item = ctx.mapping(item, item_path)
        weight = 0
        if weighted:
            weight = ctx.integer(item.get("weight"), f"{item_path}.weight", 0)
            item_path += ".podAffinityTerm"
            item = ctx.mapping(item.get("podAffinityTerm"), item_path)
        term = PodAffinityTerm(ctx.string(item.get("topologyKey"), f"{item_path}.topologyKey"),
                               label_selector(ctx, item.get("labelSelector"), f"{item_path}.labelSelector"),
                               _namespaces(ctx, item, item_path, namespace, namespace_labels))
        out.append((weight, term) if weighted else term)
    return tuple(out)


def _spread(ctx: Ctx, value, path: str) -> tuple:
    out = []
    for i, item in enumerate(ctx.sequence(value, path)):
        p = f"{path}[{i}]"
        item = ctx.mapping(item, p)
        when = ctx.string(item.get("whenUnsatisfiable"), f"{p}.whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ctx.error(f"{p}.whenUnsatisfiable", f"unknown value {when!r}")
        # The API server refuses maxSkew < 1 and minDomains < 1 (ValidateTopologySpreadConstraints).
        max_skew = ctx.integer(item.get("maxSkew"), f"{p}.maxSkew", 1)
        if max_skew < 1:
            raise ctx.error(f"{p}.maxSkew", f"must be greater than zero, got {max_skew}")
        min_domains = ctx.integer(item.get("minDomains"), f"{p}.minDomains")
        if min_domains is not None and min_domains < 1:
            raise ctx.error(f"{p}.minDomains", f"must be greater than zero, got {min_domains}")
        out.append(TopologySpreadConstraint(
            topology_key=ctx.string(item.get("topologyKey"), f"{p}.topologyKey"),
            max_skew=max_skew,
            when_unsatisfiable=when,
            selector=label_selector(ctx, item.get("labelSelector"), f"{p}.labelSelector"),
            min_domains=min_domains,
            node_affinity_policy=ctx.string(item.get("nodeAffinityPolicy"), f"{p}.nodeAffinityPolicy", "Honor"),
            node_taints_policy=ctx.string(item.get("nodeTaintsPolicy"), f"{p}.nodeTaintsPolicy", "Ignore"),
            match_label_keys=tuple(ctx.string(k, f"{p}.matchLabelKeys") for k in ctx.sequence(item.get("matchLabelKeys"), f"{p}.matchLabelKeys")),
        ))
    return tuple(out)


def _container_requests(ctx: Ctx, container: dict, path: str) -> dict:
    resources = ctx.mapping(container.get("resources"), f"{path}.resources")
    limits = ctx.resource_list(resources.get("limits"), f"{path}.resources.limits")
    requests = ctx.resource_list(resources.get("requests"), f"{path}.resources.requests")
    return {**limits, **requests}  # the API server defaults a missing request to its limit


def pod_spec(ctx: Ctx, metadata: dict, raw: object, path: str, namespace: str, namespace_labels: dict) -> PodSpec:
    """`raw`: the pod spec as read, at key path `path` ("spec" or "spec.template.spec"); metadata sits beside it."""
    spec = ctx.mapping(raw, path)
    labels = ctx.string_map(metadata.get("labels"), path[: -len("spec")] + "metadata.labels")
    containers, init_containers, host_ports = [], [], []
    # The API server defaults hostPort to containerPort on hostNetwork pods (SetDefaults_Pod), so
    # manifests that never spell out a hostPort still claim the node's port.
    host_network = spec.get("hostNetwork") is True
    for i, c in enumerate(ctx.sequence(spec.get("containers"), f"{path}.containers")):
        c = ctx.mapping(c, f"{path}.containers[{i}]")
        containers.append(_container_requests(ctx, c, f"{path}.containers[{i}]"))
        for j, port in enumerate(ctx.sequence(c.get("ports"), f"{path}.containers[{i}].ports")):
            port = ctx.mapping(port, f"{path}.containers[{i}].ports[{j}]")
            host_port = ctx.integer(port.get("hostPort"), f"{path}.containers[{i}].ports[{j}].hostPort", 0)
            if not host_port and host_network:
                host_port = ctx.integer(port.get("containerPort"), f"{path}.containers[{i}].ports[{j}].containerPort", 0)
            if host_port:
                host_ports.append(HostPort(ctx.string(port.get("hostIP"), "hostIP") or "0.0.0.0", host_port,
                                           ctx.string(port.get("protocol"), "protocol") or "TCP"))
    for i, c in enumerate(ctx.sequence(spec.get("initContainers"), f"{path}.initContainers")):
        c = ctx.mapping(c, f"{path}.initContainers[{i}]")
        init_containers.append((_container_requests(ctx, c, f"{path}.initContainers[{i}]"),
                                c.get("restartPolicy") == "Always"))
    pod_level = ctx.mapping(spec.get("resources"), f"{path}.resources")
    requests = pod_requests(containers, init_containers,
                            ctx.resource_list(spec.get("overhead"), f"{path}.overhead"),
                            ctx.resource_list(pod_level.get("requests"), f"{path}.resources.requests"))
    affinity = ctx.mapping(spec.get("affinity"), f"{path}.affinity")
    node_aff = ctx.mapping(affinity.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
    na_path = f"{path}.affinity.nodeAffinity"
    required = ctx.mapping(node_aff.get("requiredDuringSchedulingIgnoredDuringExecution"),
                           f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution")
    terms_path = f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    required_terms = tuple(
        ctx.requirements(ctx.mapping(t, f"{terms_path}[{i}]").get("matchExpressions"), f"{terms_path}[{i}].matchExpressions")
        for i, t in enumerate(ctx.sequence(required.get("nodeSelectorTerms"), terms_path)))
    pref_path = f"{na_path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred_terms = []
    for i, t in enumerate(ctx.sequence(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)):
        t = ctx.mapping(t, f"{pref_path}[{i}]")
        preference = ctx.mapping(t.get("preference"), f"{pref_path}[{i}].preference")
        preferred_terms.append((ctx.integer(t.get("weight"), f"{pref_path}[{i}].weight", 0),
                                ctx.requirements(preference.get("matchExpressions"), f"{pref_path}[{i}].preference.matchExpressions")))
    pa = ctx.mapping(affinity.get("podAffinity"), f"{path}.affinity.podAffinity")
    paa = ctx.mapping(affinity.get("podAntiAffinity"), f"{path}.affinity.podAntiAffinity")
    req_key, pref_key = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    args = (namespace, namespace_labels)
    node_selector = ctx.string_map(spec.get("nodeSelector"), f"{path}.nodeSelector")
    result = PodSpec(
        namespace=namespace, labels=labels, requests=requests, node_selector=node_selector,
        required_terms=required_terms, preferred_terms=tuple(preferred_terms),
        tolerations=ctx.tolerations(spec.get("tolerations"), f"{path}.tolerations"),
        spread=_spread(ctx, spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints"),
        affinity=_affinity_terms(ctx, pa.get(req_key), f"{path}.affinity.podAffinity.{req_key}", *args, False),
        affinity_preferred=_affinity_terms(ctx, pa.get(pref_key), f"{path}.affinity.podAffinity.{pref_key}", *args, True),
        anti_affinity=_affinity_terms(ctx, paa.get(req_key), f"{path}.affinity.podAntiAffinity.{req_key}", *args, False),
        anti_affinity_preferred=_affinity_terms(ctx, paa.get(pref_key), f"{path}.affinity.podAntiAffinity.{pref_key}", *args, True),
        host_ports=tuple(host_ports),
    )
    # Canonical content: replicas of different controllers with identical scheduling needs group together.
    result.key = (namespace, json.dumps([labels, sorted(requests.items()), node_selector,
                                         spec.get("affinity"), spec.get("tolerations"),
                                         spec.get("topologySpreadConstraints"), [repr(h) for h in host_ports]],
                                        sort_keys=True, default=repr))
    return result


def load_pod(obj: dict, ctx: Ctx, namespace_labels: dict) -> Pod:
    metadata = ctx.mapping(obj.get("metadata"), "metadata")
    namespace = ctx.string(metadata.get("namespace"), "metadata.namespace", "default")
    spec = pod_spec(ctx, metadata, obj.get("spec"), "spec", namespace, namespace_labels)
    owners = ctx.sequence(metadata.get("ownerReferences"), "metadata.ownerReferences")
    kinds = frozenset(str(o.get("kind")) for o in owners if isinstance(o, dict) and o.get("kind"))
    node_name = ctx.string(ctx.mapping(obj.get("spec"), "spec").get("nodeName"), "spec.nodeName") or None
    return Pod(f"{namespace}/{ctx.string(metadata.get('name'), 'metadata.name')}", spec, node_name,
               "DaemonSet" in kinds, kinds, metadata.get("deletionTimestamp") is not None)


MAX_PODS = 100_000
"""Default ceiling on the pods one simulation expands (`simulate --max-pods` raises it): a
`replicas: 10000000` typo is refused at once instead of planning for minutes."""


def job_labels(metadata: dict, labels: dict) -> dict:
    """The labels the Job controller adds to its pods (job-name, controller-uid and their
    batch.kubernetes.io/ forms), so selectors and anti-affinity can match them."""
    name, uid = str(metadata.get("name")), metadata.get("uid")
    out = {**labels, "job-name": name, "batch.kubernetes.io/job-name": name}
    if uid:
        out.update({"controller-uid": str(uid), "batch.kubernetes.io/controller-uid": str(uid)})
    return out


def replica_count(obj: dict, ctx: Ctx, kind: str) -> int:
    spec = ctx.mapping(obj.get("spec"), "spec")
    if kind == "Job":
        count = ctx.integer(spec.get("parallelism"), "spec.parallelism", 1)
        completions = ctx.integer(spec.get("completions"), "spec.completions")
        if completions is not None:
            count = min(count, completions)  # a Job never runs more pods at once than it still needs
    else:
        count = ctx.integer(spec.get("replicas"), "spec.replicas", 1)
    field = "spec.parallelism" if kind == "Job" else "spec.replicas"
    if count < 0:
        raise ctx.error(field, f"must be zero or more, got {count}")
    return count


def check_pod_ceiling(ctx: Ctx, kind: str, count: int, limit: int) -> None:
    """Refuse a controller whose pods would cross the simulation's ceiling (`--max-pods`)."""
    if count > limit:
        field = "spec.parallelism" if kind == "Job" else "spec.replicas"
        raise ctx.error(field, f"{count:,} pods exceed the ceiling of {limit:,} pods per simulation "
                               "(raise it with --max-pods)")


def load_controller(obj: dict, ctx: Ctx, kind: str, namespace_labels: dict, count: int | None = None,
                    start: int = 0) -> list:
    """The controller's pods; `count` (default: its replicas) pods named from index `start`."""
    metadata, spec = ctx.parts(obj, "metadata", "spec")
    namespace = ctx.string(metadata.get("namespace"), "metadata.namespace", "default")
    name = ctx.string(metadata.get("name"), "metadata.name")
    if count is None:
        count = replica_count(obj, ctx, kind)
    template = ctx.mapping(spec.get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    if kind == "Job":
        tmeta = {**tmeta, "labels": job_labels(metadata, ctx.string_map(tmeta.get("labels"), "spec.template.metadata.labels"))}
    pod = pod_spec(ctx, tmeta, template.get("spec"), "spec.template.spec", namespace, namespace_labels)
    owner = frozenset({kind})
    return [Pod(f"{namespace}/{name}-{i}", pod, owner_kinds=owner) for i in range(start, start + max(count, 0))]


def load_daemonset(obj: dict, ctx: Ctx, namespace_labels: dict) -> DaemonSet:
    metadata = ctx.mapping(obj.get("metadata"), "metadata")
    namespace = ctx.string(metadata.get("namespace"), "metadata.namespace", "default")
    template = ctx.mapping(ctx.mapping(obj.get("spec"), "spec").get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    spec = pod_spec(ctx, tmeta, template.get("spec"), "spec.template.spec", namespace, namespace_labels)
    spec.tolerations = spec.tolerations + DAEMON_TOLERATIONS
    return DaemonSet(f"{namespace}/{ctx.string(metadata.get('name'), 'metadata.name')}", spec)
