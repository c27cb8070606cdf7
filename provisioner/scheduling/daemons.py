"""DaemonSet overhead: which daemons land on a node, counted once per node (scheduler.go)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from kubefacts import labels as L
from .requirements import Requirements
from .resources import add
from .taints import TOLERATE_PREFER_NO_SCHEDULE, HostPort, Taint, untolerated

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import DaemonSet, InstanceType, PodSpec


def strict_requirements(spec: PodSpec, term_index: int = 0) -> Requirements:
    reqs = Requirements.from_labels(spec.node_selector)
    if spec.required_terms:
        reqs.add(*spec.required_terms[term_index].values())
    return reqs


def template_candidates(daemonset: DaemonSet, template_reqs: Requirements,
                        taints: Iterable[Taint]) -> list[Requirements]:
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


def overhead_for_type(candidates_by_daemon: Iterable[tuple[DaemonSet, Sequence[Requirements]]],
                      instance_type: InstanceType) -> tuple[dict[str, int], tuple[HostPort, ...]]:
    """Summed requests (pods included) and host ports of the daemons that fit this instance type."""
    total: dict[str, int] = {}
    ports: tuple[HostPort, ...] = ()
    for daemonset, candidates in candidates_by_daemon:
        if any(instance_type.requirements.intersects(reqs) is None for reqs in candidates):
            total = add(total, daemonset.spec.requests)
            ports += daemonset.spec.host_ports
    return total, ports


def overhead_for_node(daemonsets: Iterable[DaemonSet], node_labels: dict[str, str], taints: Iterable[Taint],
                      bound_daemon_requests: Mapping[str, int]) -> tuple[dict[str, int], tuple[HostPort, ...]]:
    """Daemons still to start on an existing node: compatible ones minus those already bound there."""
    node_reqs = Requirements.from_labels(node_labels)
    total: dict[str, int] = {}
    ports: tuple[HostPort, ...] = ()
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
