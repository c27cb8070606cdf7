"""Volume topology (pkg/controllers/provisioning/scheduling/volumetopology.go).

A pod's PersistentVolumeClaims constrain where its node may be: a bound claim by its
PersistentVolume's required node affinity (without the hostname of local/hostPath volumes), an
unbound WaitForFirstConsumer claim by its StorageClass's `allowedTopologies`. Each volume gives
alternatives (OR-ed terms); the alternatives of all volumes are merged as upstream does, keeping
the compatible combinations, and the scheduler tries them in order on each node and NodePool
(nodeclaim.go / existingnode.go `CanAdd`: the first alternative that fits narrows the node). A
claim Karpenter cannot use (missing, being deleted, Lost, bound without bind-completed, unbound
with Immediate binding or no StorageClass) makes the pod ignored, as `ValidatePersistentVolumeClaims`
does.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kubefacts import labels as L
from kubefacts.errors import Refusal
from .requirements import Requirements

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import StorageClass, Volume, VolumeClaim


class VolumeError(Refusal):
    """Why Karpenter ignores this pod (the message upstream logs)."""


def _claim_alternatives(claim: VolumeClaim, volumes: Mapping[str, Volume],
                        classes: Mapping[str, StorageClass]) -> list[Requirements]:
    if claim.deleting:
        raise VolumeError(f"persistentvolumeclaim {claim.namespace}/{claim.name} is being deleted")
    if claim.lost:
        raise VolumeError(f"persistentvolumeclaim {claim.namespace}/{claim.name} bound to non-existent persistentvolume")
    if claim.volume_name:
        volume = volumes.get(claim.volume_name)
        if volume is None:
            raise VolumeError(f"persistentvolume {claim.volume_name} of claim {claim.namespace}/{claim.name} not found")
        if volume.deleting:
            raise VolumeError(f"persistentvolume {claim.volume_name} is being deleted")
        if not claim.bind_completed:
            raise VolumeError(f"persistentvolumeclaim {claim.namespace}/{claim.name} is considered unbound "
                              "(no pv.kubernetes.io/bind-completed annotation)")
        out = []
        for term in volume.terms:
            reqs = term.without(L.HOSTNAME) if volume.local else term
            if len(reqs) or (volume.local and len(term)):
                out.append(reqs)
        return out
    if not claim.storage_class:
        raise VolumeError(f"unbound persistentvolumeclaim {claim.namespace}/{claim.name} must define a storage class")
    sc = classes.get(claim.storage_class)
    if sc is None:
        raise VolumeError(f"storage class {claim.storage_class} of claim {claim.namespace}/{claim.name} not found")
    if sc.binding_mode != "WaitForFirstConsumer":
        raise VolumeError(f"persistentvolumeclaim {claim.namespace}/{claim.name} with immediate volume binding mode must be bound")
    return list(sc.allowed_topologies)


def merge_alternatives(alternatives: Sequence[Requirements | None],
                       volume_alternatives: Sequence[Requirements]) -> list[Requirements]:
    """mergeVolumeRequirementAlternatives: compatible combinations, else all of them."""
    merged = [a.merged(v) if a is not None else v for a in alternatives for v in volume_alternatives
              if a is None or a.intersects(v) is None]
    if merged:
        return merged
    return [a.merged(v) if a is not None else v for a in alternatives for v in volume_alternatives]


def pod_volume_alternatives(claims: Sequence[VolumeClaim], volumes: Mapping[str, Volume],
                            classes: Mapping[str, StorageClass]) -> tuple[Requirements, ...]:
    """GetRequirements: the node requirement alternatives a pod's claims impose, in order (empty
    for none); raises VolumeError."""
    alternatives: Sequence[Requirements | None] = [None]
    for claim in claims:
        found = _claim_alternatives(claim, volumes, classes)
        if found:
            alternatives = merge_alternatives(alternatives, found)
    return tuple(a for a in alternatives if a is not None)
