"""Which pods Karpenter provisions for: `IsProvisionable` (pkg/utils/pod/scheduling.go) and the
provisioner's `Validate` (pkg/controllers/provisioning/provisioner.go), on object dicts.

Manifests carry no status, so a pod without one counts as marked Unschedulable by the
kube-scheduler; everything else is checked as upstream does. The reason is what the simulator
reports for an ignored pod.
"""
from __future__ import annotations

from kubefacts import labels as L
from .fields import mapping_or_empty

TERMINAL_PHASES = ("Succeeded", "Failed")


def _owners(metadata: dict) -> list:
    owners = metadata.get("ownerReferences")
    return [o for o in owners if isinstance(o, dict)] if isinstance(owners, list) else []


def _owned_by(metadata: dict, api_version: str, kind: str) -> bool:
    return any(o.get("apiVersion") == api_version and o.get("kind") == kind for o in _owners(metadata))


def spec_reason(spec: object) -> str | None:
    """Reasons found in a pod spec (also a controller's template): gates and Validate."""
    if not isinstance(spec, dict):
        return None
    gates = spec.get("schedulingGates")
    if isinstance(gates, list) and gates:
        names = ", ".join(str(g.get("name")) for g in gates if isinstance(g, dict))
        return f"has schedulingGates ({names}): the kube-scheduler does not mark it Unschedulable until they are removed"
    affinity = mapping_or_empty(spec.get("affinity"))
    node_affinity = mapping_or_empty(affinity.get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else []:
        if not isinstance(term, dict):
            continue
        if term.get("matchFields") is not None:
            return "node selector term with matchFields is not supported"
        for expr in term.get("matchExpressions") or []:
            if isinstance(expr, dict) and expr.get("key") == L.NODEPOOL and expr.get("operator") == "DoesNotExist":
                return f"configured to not run on a Karpenter provisioned node ({L.NODEPOOL} DoesNotExist)"
    return None


def pod_reason(obj: dict) -> str | None:
    """Why Karpenter would not provision for this unbound Pod, or None."""
    metadata = mapping_or_empty(obj.get("metadata"))
    status = mapping_or_empty(obj.get("status"))
    phase = status.get("phase")
    if phase in TERMINAL_PHASES:
        return f"terminal (phase {phase})"
    if status.get("nominatedNodeName"):
        return f"the kube-scheduler is preempting room for it on node {status['nominatedNodeName']} (status.nominatedNodeName)"
    if _owned_by(metadata, "apps/v1", "DaemonSet"):
        return "owned by a DaemonSet (the DaemonSet controller places it on its node)"
    if _owned_by(metadata, "v1", "Node"):
        return "a static (mirror) pod owned by its node"
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        for c in conditions:
            if (isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
                    and c.get("reason") not in (None, "Unschedulable")):
                return f"PodScheduled is {c.get('reason')}, not Unschedulable: the kube-scheduler has not given up on it"
    return spec_reason(obj.get("spec"))
