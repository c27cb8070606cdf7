"""The outcome of a scheduling run: planned NodeClaims with their launch choice, pods on existing
nodes, and the reasons of the pods that found no place."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubefacts import labels as L
from .nodeclaim import ExistingTarget, NodeClaim
from .requirements import Requirements

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import InstanceType, Offering, Pod


@dataclass
class PlannedNodeClaim:
    nodepool: str
    instance_type: InstanceType
    offering: Offering
    pods: list[Pod]
    requests: dict[str, int]
    options: list[str]  # instance type names, cheapest first
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class Results:
    nodeclaims: list[PlannedNodeClaim] = field(default_factory=list)
    existing: list[tuple[str, list[Pod]]] = field(default_factory=list)  # (node name, [pods])
    errors: dict[Pod, str] = field(default_factory=dict)  # pod -> reason
    pods: list[Pod] = field(default_factory=list)


def build_results(targets: Iterable[NodeClaim | ExistingTarget], pods: Iterable[Pod],
                  errors: dict[Pod, str]) -> Results:
    results = Results(errors=errors, pods=list(pods))
    for target in targets:
        if isinstance(target, ExistingTarget):
            if target.pods:
                results.existing.append((target.name, target.pods))
            continue
        tpl = target.template
        reqs = target.requirements.without(L.HOSTNAME)
        index, offering, names = tpl.launch(target.options, reqs)
        if index is None or offering is None:  # both or neither; defensive: options always have an offering
            for pod in target.pods:
                errors[pod] = f'nodepool "{tpl.name}": no offering left in the allowed zones and capacity types'
            continue
        it = tpl.types[index]
        requests: dict[str, int] = dict(tpl.daemon_overhead[index])
        for pod in target.pods:  # resources.add, in place (one dict per NodeClaim, not per pod)
            for key, amount in pod.spec.requests.items():
                requests[key] = requests.get(key, 0) + amount
        results.nodeclaims.append(PlannedNodeClaim(tpl.name, it, offering, target.pods, requests, names,
                                                   node_labels(reqs, it, offering)))
    return results


def node_labels(reqs: Requirements, it: InstanceType, offering: Offering) -> dict[str, str]:
    """The labels the node would carry: NodePool labels, single-valued requirements, its type's labels."""
    labels: dict[str, str] = {}
    for source in (it.requirements, reqs):
        for key, req in source._reqs.items():
            if not req.complement and len(req.values) == 1:
                labels[key] = next(iter(req.values))
    for key, req in reqs._reqs.items():  # custom labels get one concrete value (resolveCustomLabels)
        if key not in L.WELL_KNOWN_LABELS and key not in labels and (value := req.any()):
            labels[key] = value
    labels.update({L.ZONE: offering.zone, L.CAPACITY_TYPE: offering.capacity_type, L.INSTANCE_TYPE: it.name})
    labels.pop(L.REGISTERED, None)
    labels.pop(L.INITIALIZED, None)
    return labels
