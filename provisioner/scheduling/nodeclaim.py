"""Scheduling targets: in-flight NodeClaims and existing nodes (nodeclaim.go, existingnode.go).

`propose` answers "can n pods of this variant go here, and what would change" without mutating;
`commit` applies a proposal. Rejections say whether they are final for this target, so the
scheduler can skip the target for that variant from then on.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kubefacts import labels as L
from .requirements import Requirement, Requirements
from .taints import HostPort, ports_conflict, untolerated

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import ExistingNode, Pod
    from .instance_selection import Template
    from .preferences import Variant
    from .topology import Topology

WELL_KNOWN = L.WELL_KNOWN_LABELS


# What a rejection carries in place of requirements and options (only a fit is committed) and an
# existing node's proposal in place of options (it has no instance types to narrow). Never mutated.
_NO_REQUIREMENTS = Requirements()
_NO_OPTIONS: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)


class Proposal:
    """n pods fit (n > 0) with these requirements and options; or a rejection, final or for now."""
    __slots__ = ("n", "permanent", "requirements", "options")

    def __init__(self, n: int, permanent: bool = True, requirements: Requirements = _NO_REQUIREMENTS,
                 options: npt.NDArray[np.int64] = _NO_OPTIONS) -> None:
        self.n, self.permanent = n, permanent
        self.requirements, self.options = requirements, options


REJECT_FINAL = Proposal(0, True)
REJECT_FOR_NOW = Proposal(0, False)
_INCOMPATIBLE = Requirements()  # ExistingTarget.merge_cache's mark of a variant whose requirements conflict


def _changed(base: Requirements, merged: Requirements, keys: Iterable[str]) -> Sequence[str]:
    return [k for k in keys if merged.raw(k) is not base.raw(k) and merged.raw(k) != base.raw(k)]


def merge_topology(topology: Topology, variant: Variant, reqs: Requirements, allow: Collection[str]
                   ) -> tuple[Requirements, Sequence[str], None] | tuple[None, Sequence[str], str]:
    """Requirements after the topology narrows them, the keys it changed, or a rejection reason."""
    groups = variant.groups + variant.sig.inverse_selecting if variant.sig.inverse_selecting else variant.groups
    if not groups:
        return reqs, (), None
    found = topology.add_requirements(groups, variant.strict, reqs, variant.sig.spec)
    if found[0] is None:  # (None, the unsatisfiable group): indexed, as mypy narrows the pair only so
        return None, (), found[1].describe()
    added = found[0]
    raw = reqs._reqs
    for req in added:  # the usual case: the node is already pinned to the domain the topology picks
        have = raw.get(req.key)
        if have is None or req.complement or req.gte is not None or req.lte is not None or have != req:
            break
    else:
        return reqs, (), None  # merging would change nothing (same values; compatible, as non-empty)
    extra = type(reqs)(added)
    err = reqs.compatible(extra, allow)
    if err is not None:
        return None, (), err
    merged = reqs.merged(extra)
    return merged, _changed(reqs, merged, extra.keys()), None


class NodeClaim:
    envelope: tuple[tuple[int, ...], tuple[int, ...]] | None

    def __init__(self, template: Template, hostname: str, requirements: Requirements,
                 options: npt.NDArray[np.int64], index: int, ndims: int) -> None:
        self.template, self.hostname, self.index = template, hostname, index
        self.requirements = requirements
        self.taints = template.taints
        self.options = options
        self.used = [0] * ndims
        self.envelope = None  # (largest, smallest) allocatable among the options, when next needed
        self.pods: list[Pod] = []
        self.host_ports: list[HostPort] = []
        self.merge_cache: dict[int, tuple[Requirements | None, Sequence[str]]] = {}

    def propose(self, variant: Variant, k: int, topology: Topology) -> Proposal:
        tpl, sig = self.template, variant.sig
        for group, limit in variant.host_checks:
            if group.counts.get(self.hostname, 0) > limit:
                return REJECT_FINAL
        if variant.template_taint(tpl) is not None:
            return REJECT_FINAL
        if sig.spec.host_ports and ports_conflict(sig.spec.host_ports, self.host_ports):
            return REJECT_FINAL
        entry = self.merge_cache.get(variant.merge_id)
        if entry is None:
            err = self.requirements.compatible(variant.requirements, WELL_KNOWN)
            if err is None:
                merged = self.requirements.merged(variant.requirements)
                changed = _changed(self.requirements, merged, variant.requirements.keys())
                entry = (merged if changed else self.requirements, changed)
            else:
                entry = (None, ())
            self.merge_cache[variant.merge_id] = entry
        reqs, changed = entry
        if reqs is None:
            return REJECT_FINAL
        envelope = self.envelope
        if envelope is None:  # computed here, not at commit: many NodeClaims are never proposed again
            envelope = self.envelope = tpl.envelope(self.options)
        request, used, env_max = sig.request_vector, self.used, envelope[0]
        for u, r, m in zip(used, request, env_max):
            if u + r > m:
                return REJECT_FINAL
        reqs, topo_changed, _ = merge_topology(topology, variant, reqs, WELL_KNOWN)
        if reqs is None:
            return REJECT_FINAL if variant.monotone else REJECT_FOR_NOW
        final = variant.monotone or not topo_changed
        options = self.options
        keys = list(changed) + [k for k in topo_changed if k not in changed]
        if keys:
            options = tpl.restrict(options, reqs, keys)
        if sig.spec.host_ports and len(options):
            options = options[[not ports_conflict(sig.spec.host_ports, tpl.daemon_ports[i]) for i in options.tolist()]]
        if not len(options):
            return REJECT_FINAL if final else REJECT_FOR_NOW
        if variant.free and k > 1 and not tpl.has_min_values:  # minValues can cap a batch below what fits
            # All k fit when they fit the smallest option (options only narrow from self.options).
            if all(u + k * r <= low for u, r, low in zip(used, request, envelope[1])):
                n = k
            else:
                n = min(k, tpl.max_count(options, used, request))
        else:
            n = 1
        if n == 0:
            return REJECT_FINAL if final else REJECT_FOR_NOW
        total = [u + n * r for u, r in zip(used, request)]
        if options is not self.options or any(t > m for t, m in zip(total, envelope[1])):
            options = tpl.fitting(options, total)
            if not len(options):
                return REJECT_FINAL if final else REJECT_FOR_NOW
            if tpl.has_min_values and tpl.min_values_error(options, reqs):
                return REJECT_FINAL if final else REJECT_FOR_NOW
        return Proposal(n, requirements=reqs, options=options)

    def commit(self, variant: Variant, proposal: Proposal, pods: Iterable[Pod], topology: Topology) -> None:
        sig, n = variant.sig, proposal.n
        self.pods.extend(pods)
        self.used = [u + n * r for u, r in zip(self.used, sig.request_vector)]
        if proposal.options is not self.options:
            self.options = proposal.options
            self.envelope = None
        if proposal.requirements is not self.requirements:
            self.requirements = proposal.requirements
            self.merge_cache = {}
        topology.record(sig.counting, sig.inverse_owned, self.taints, self.requirements, n, WELL_KNOWN)
        self.host_ports.extend(sig.spec.host_ports)


class ExistingTarget:
    """A Node already in the cluster: fixed capacity, labels as requirements, no allow-undefined."""

    def __init__(self, node: ExistingNode, requirements: Requirements, remaining: list[int], schedulable: bool,
                 host_ports: Iterable[HostPort], index: int) -> None:
        self.node, self.name, self.index = node, node.name, index
        self.hostname = node.labels.get(L.HOSTNAME, node.name)
        self.requirements = requirements
        self.taints = node.taints
        self.remaining = remaining
        self.schedulable = schedulable  # false when any allocatable is already negative (resources.Fits)
        self.host_ports = list(host_ports)
        self.pods: list[Pod] = []
        self.merge_cache: dict[int, Requirements] = {}  # merged Requirements, or the _INCOMPATIBLE sentinel
        self.volume_limits: dict[str, int] = {}  # CSI driver -> attachable volumes (CSINode), set by the scheduler
        self.volume_usage: dict[str, set[str]] = {}  # CSI driver -> claims already attached

    def propose(self, variant: Variant, k: int, topology: Topology) -> Proposal:
        sig = variant.sig
        for group, limit in variant.host_checks:
            if group.counts.get(self.hostname, 0) > limit:
                return REJECT_FINAL
        if not self.schedulable or untolerated(self.taints, variant.tolerations) is not None:
            return REJECT_FINAL
        if sig.current_volumes and self.volume_limits and self._exceeds_volume_limits(sig.current_volumes):
            return REJECT_FOR_NOW  # volumeusage.go ExceedsLimits (another pod's claims may still fit)
        if sig.spec.host_ports and ports_conflict(sig.spec.host_ports, self.host_ports):
            return REJECT_FINAL
        request = sig.request_vector
        for have, r in zip(self.remaining, request):
            if r > have:
                return REJECT_FINAL
        entry = self.merge_cache.get(variant.merge_id)
        if entry is None:
            err = self.requirements.compatible(variant.requirements)
            entry = _INCOMPATIBLE if err is not None else self.requirements.merged(variant.requirements)
            self.merge_cache[variant.merge_id] = entry
        if entry is _INCOMPATIBLE:
            return REJECT_FINAL
        reqs, _, _ = merge_topology(topology, variant, entry, frozenset())
        if reqs is None:
            return REJECT_FINAL if variant.monotone else REJECT_FOR_NOW
        n = 1
        if variant.free and k > 1:
            n = min([k] + [have // r for have, r in zip(self.remaining, request) if r > 0])
        return Proposal(n, requirements=reqs)

    def _exceeds_volume_limits(self, volumes: Iterable[tuple[str, str]]) -> bool:
        for driver, limit in self.volume_limits.items():
            mine = {claim for d, claim in volumes if d == driver}
            if mine and len(self.volume_usage.get(driver, set()) | mine) > limit:
                return True
        return False

    def commit(self, variant: Variant, proposal: Proposal, pods: Sequence[Pod], topology: Topology) -> None:
        sig, n = variant.sig, proposal.n
        self.pods.extend(pods)
        for pod in pods:
            for driver, claim in pod.volumes:
                self.volume_usage.setdefault(driver, set()).add(claim)
        self.remaining = [have - n * r for have, r in zip(self.remaining, sig.request_vector)]
        if proposal.requirements != self.requirements:
            self.requirements = proposal.requirements
            self.merge_cache = {}
        topology.record(sig.counting, sig.inverse_owned, self.taints, self.requirements, n)
        self.host_ports.extend(sig.spec.host_ports)


def hostname_requirement(hostname: str) -> Requirement:
    return Requirement.in_(L.HOSTNAME, hostname)
