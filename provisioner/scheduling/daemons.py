"""DaemonSet overhead: which daemons land on a node, counted once per node (scheduler.go)."""
from __future__ import annotations

from kubefacts import labels as L
from .requirements import Requirements
from .resources import add
from .taints import TOLERATE_PREFER_NO_SCHEDULE, untolerated


def strict_requirements(spec, term_index: int = 0) -> Requirements:
    reqs = Requirements.from_labels(spec.node_selector)
    if spec.required_terms:
        reqs.add(*spec.required_terms[term_index].values())
    return reqs


def template_candidates(daemonset, template_reqs: Requirements, taints) -> list:
    """The daemon's requirement alternatives a NodePool template accepts (isDaemonPodCompatible).

    Daemons tolerate PreferNoSchedule here, and each required node-affinity term is tried in turn.
    """
    spec = daemonset.spec
    if untolerated(taints, spec.tolerations + (TOLERATE_PREFER_NO_SCHEDULE,)) is not None:
        return []
    terms = range(len(spec.required_terms)) if spec.required_terms else [0]
    out = []
    for i in terms:
        reqs = strict_requirements(spec, i)
        if template_reqs.is_compatible(reqs, L.WELL_KNOWN_LABELS):
            out.append(reqs)
    return out


def overhead_for_type(candidates_by_daemon, instance_type) -> tuple[dict, tuple]:
    """Summed requests (pods included) and host ports of the daemons that fit this instance type."""
    total: dict = {}
    ports: tuple = ()
    for daemonset, candidates in candidates_by_daemon:
        if any(instance_type.requirements.intersects(reqs) is None for reqs in candidates):
            total = add(total, daemonset.spec.requests)
            ports += daemonset.spec.host_ports
    return total, ports


def overhead_for_node(daemonsets, node_labels: dict, taints, bound_daemon_requests: dict) -> tuple[dict, tuple]:
    """Daemons still to start on an existing node: compatible ones minus those already bound there."""
    node_reqs = Requirements.from_labels(node_labels)
    total: dict = {}
    ports: tuple = ()
    for daemonset in daemonsets:
        spec = daemonset.spec
        if untolerated(taints, spec.tolerations) is not None:
            continue
        if node_reqs.compatible(strict_requirements(spec)) is not None:
            continue
        total = add(total, spec.requests)
        ports += spec.host_ports
    remaining = {k: max(v - bound_daemon_requests.get(k, 0), 0) for k, v in total.items()}
    return remaining, ports
