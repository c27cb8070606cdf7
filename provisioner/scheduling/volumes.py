"""Volume topology (pkg/controllers/provisioning/scheduling/volumetopology.go).

A pod's PersistentVolumeClaims constrain where its node may be: a bound claim by its
PersistentVolume's required node affinity (without the hostname of local/hostPath volumes), an
unbound WaitForFirstConsumer claim by its StorageClass's `allowedTopologies`. Each volume gives
alternatives (OR-ed terms); the alternatives of all volumes are merged as upstream does, keeping
the compatible combinations. A claim Karpenter cannot use (missing, being deleted, Lost, bound
without bind-completed, unbound with Immediate binding or no StorageClass) makes the pod ignored,
as `ValidatePersistentVolumeClaims` does.
"""
from __future__ import annotations

from .. import labels as L
from .requirements import Requirement, Requirements


class VolumeError(Exception):
    """Why Karpenter ignores this pod (the message upstream logs)."""


def _claim_alternatives(claim, volumes: dict, classes: dict) -> list:
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


def merge_alternatives(alternatives: list, volume_alternatives: list) -> list:
    """mergeVolumeRequirementAlternatives: compatible combinations, else all of them."""
    merged = [a.merged(v) if a is not None else v for a in alternatives for v in volume_alternatives
              if a is None or a.intersects(v) is None]
    if merged:
        return merged
    return [a.merged(v) if a is not None else v for a in alternatives for v in volume_alternatives]


def collapse(alternatives: list) -> Requirements | None:
    """One requirement set for the scheduler. Alternatives that differ in a single key are that key's
    union (zone a OR zone b is zone In [a, b]); otherwise the first alternative is used."""
    if not alternatives:
        return None
    if len(alternatives) == 1:
        return alternatives[0]
    keys = {tuple(sorted(a.keys())) for a in alternatives}
    if len(keys) == 1 and len(next(iter(keys))) == 1:
        key = next(iter(keys))[0]
        parts = [a.get(key) for a in alternatives]
        if all(not p.complement and p.gte is None and p.lte is None for p in parts):
            return Requirements([Requirement(key, False, frozenset().union(*(p.values for p in parts)))])
    return alternatives[0]


def pod_volume_requirements(claims: list, volumes: dict, classes: dict) -> Requirements | None:
    """The node requirements a pod's claims impose (None for none); raises VolumeError."""
    alternatives: list = [None]
    for claim in claims:
        found = _claim_alternatives(claim, volumes, classes)
        if found:
            alternatives = merge_alternatives(alternatives, found)
    alternatives = [a for a in alternatives if a is not None]
    return collapse(alternatives)
