"""Pod variants: a pod's constraints after 0, 1, 2... relaxation steps (preferences.go).

Karpenter first treats preferences as requirements, then on failure relaxes one at a time:
drop the first of several required node-affinity terms, the heaviest preferred pod affinity,
the heaviest preferred pod anti-affinity, the heaviest preferred node affinity, one
ScheduleAnyway spread constraint, and finally tolerate PreferNoSchedule taints (only when some
NodePool has one). Identical pods share one Signature and therefore one chain of Variants.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from .requirements import Requirements
from .taints import TOLERATE_PREFER_NO_SCHEDULE, Taint, Toleration, untolerated

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import PodAffinityTerm, PodSpec, TopologySpreadConstraint
    from .instance_selection import Template
    from .topology import TopologyGroup

_Weighted = TypeVar("_Weighted", bound=tuple[int, Any])

_SKIP = "skip"  # key of the existing-target skip pointers in Variant.dead
# The scheduler's reasons that never change for a variant and NodePool: (why not, None, None), or
# (None, the merged requirements, the instance types left)
StaticCheck = tuple[str, None, None] | tuple[None, Requirements, npt.NDArray[np.int64]]


@dataclass(frozen=True)
class Constraints:
    required_terms: tuple[Requirements, ...]
    preferred_terms: tuple[tuple[int, Requirements], ...]  # (weight, Requirements), heaviest first
    affinity_preferred: tuple[tuple[int, PodAffinityTerm], ...]  # (weight, term), heaviest first
    anti_preferred: tuple[tuple[int, PodAffinityTerm], ...]
    spread: tuple[TopologySpreadConstraint, ...]
    tolerations: tuple[Toleration, ...]


def _heaviest_first(items: Iterable[_Weighted]) -> tuple[_Weighted, ...]:
    return tuple(sorted(items, key=lambda item: -item[0]))  # stable, like sort.SliceStable


def initial(spec: PodSpec) -> Constraints:
    return Constraints(spec.required_terms, _heaviest_first(spec.preferred_terms),
                       _heaviest_first(spec.affinity_preferred), _heaviest_first(spec.anti_affinity_preferred),
                       spec.spread, spec.tolerations)


def relax(c: Constraints, tolerate_prefer_no_schedule: bool) -> tuple[Constraints, str] | None:
    """The next relaxation and a description of it, or None when nothing is left to relax."""
    if len(c.required_terms) > 1:
        return replace(c, required_terms=c.required_terms[1:]), "removed required node affinity term 0"
    if c.affinity_preferred:
        return replace(c, affinity_preferred=c.affinity_preferred[1:]), "removed heaviest preferred pod affinity"
    if c.anti_preferred:
        return replace(c, anti_preferred=c.anti_preferred[1:]), "removed heaviest preferred pod anti-affinity"
    if c.preferred_terms:
        return replace(c, preferred_terms=c.preferred_terms[1:]), "removed heaviest preferred node affinity"
    for i, tsc in enumerate(c.spread):
        if tsc.when_unsatisfiable == "ScheduleAnyway":
            spread = list(c.spread)
            spread[i] = spread[-1]  # Karpenter swaps in the last constraint before truncating
            return replace(c, spread=tuple(spread[:-1])), "removed a ScheduleAnyway topology spread constraint"
    if tolerate_prefer_no_schedule and TOLERATE_PREFER_NO_SCHEDULE not in c.tolerations:
        return replace(c, tolerations=c.tolerations + (TOLERATE_PREFER_NO_SCHEDULE,)), \
            "tolerated PreferNoSchedule taints"
    return None


def node_requirements(spec: PodSpec, constraints: Constraints) -> tuple[Requirements, Requirements]:
    """(strict, requirements) of a relaxation level: the node selector and first required term,
    and those with the first preferred term (the requirements a NodeClaim takes on)."""
    strict = Requirements.from_labels(spec.node_selector)
    if constraints.required_terms:
        strict.add(*constraints.required_terms[0].values())
    if not constraints.preferred_terms:
        return strict, strict
    requirements = Requirements.from_labels(spec.node_selector)
    requirements.add(*constraints.preferred_terms[0][1].values())
    if constraints.required_terms:
        requirements.add(*constraints.required_terms[0].values())
    return strict, requirements


class Variant:
    """One relaxation level of a signature, with everything the scheduler caches per level."""

    def __init__(self, sig: Signature, level: int, constraints: Constraints, vid: int,
                 volume: Requirements | None = None,
                 made: tuple[Requirements, Requirements] | None = None) -> None:
        """made: node_requirements(sig.spec, constraints), when already made (never changed)."""
        self.sig, self.level, self.constraints, self.id = sig, level, constraints, vid
        self.merge_id = vid  # key of targets' requirement merges: one per distinct requirements (the scheduler's)
        self.strict, self.requirements = made if made is not None else node_requirements(sig.spec, constraints)
        if volume is not None:  # one volume topology alternative: node requirements only, not the strict ones
            self.requirements = self.requirements.merged(volume)
        self.tolerations = constraints.tolerations
        self.groups: list[TopologyGroup] = []  # owned topology groups, filled by the scheduler
        self.monotone = True  # every rejection of a target is final (no zonal spread / affinity)
        self.free = True  # no topology of its own and no host ports: identical pods can be placed in bulk
        self.host_checks: list[tuple[TopologyGroup, int]] = []  # (group, limit): a node whose count exceeds limit never fits (hostname key)
        self.dead: dict[str, Any] = {}  # targets that can never take this variant (skip pointers under _SKIP; in-flight masks)
        self.taint_cache: dict[int, Taint | None] = {}  # template index -> template_taint
        self.template_cache: dict[int, StaticCheck] = {}  # template index -> the scheduler's static reasons

    def template_taint(self, template: Template) -> Taint | None:
        """The NodePool taint this variant does not tolerate (cached per template), or None."""
        cache, index = self.taint_cache, template.index
        if index not in cache:
            cache[index] = untolerated(template.taints, self.tolerations)
        return cache[index]

    def next_alive(self, i: int) -> int:
        """Smallest target index >= i not known to reject this variant forever (path-compressed
        skip pointers: skip[j] == j while target j is alive)."""
        skip = self.dead.get(_SKIP)
        if skip is None:
            return i
        size = len(skip)
        root = i
        while root < size and skip[root] != root:
            root = skip[root]
        while i < size and skip[i] != i and skip[i] != root:
            skip[i], i = root, skip[i]
        return root

    def kill(self, i: int) -> None:
        """Target i never takes this variant. The pointers are a 4-byte array per shape, not a dict
        entry per target: a pending Deployment's own anti-affinity rejects every existing node."""
        skip = self.dead.get(_SKIP)
        if skip is None:
            skip = self.dead[_SKIP] = array("i")
        if len(skip) <= i:
            skip.extend(range(len(skip), i + 1))
        skip[i] = i + 1


def skip_runs(starts: Iterable[int], ends: Iterable[int]) -> dict[str, Any]:
    """A Variant.dead that skips the targets of each run [start, end), known to reject the variant
    forever: each points past its run, the way `kill` leaves them once path-compressed."""
    skip = array("i")
    for start, end in zip(starts, ends):
        skip.extend(range(len(skip), start))
        skip.extend(array("i", [end]) * (end - start))
    return {_SKIP: skip} if skip else {}


def skip_flagged(flags: list[bool]) -> dict[str, Any]:
    """skip_runs over the runs of True in `flags` (targets known to reject a variant forever)."""
    starts: list[int] = []
    ends: list[int] = []
    inside = False
    for i, flag in enumerate(flags):
        if flag != inside:
            (starts if flag else ends).append(i)
            inside = flag
    if inside:
        ends.append(len(flags))
    return skip_runs(starts, ends)


class Signature:
    """Pods with identical scheduling needs (same PodSpec.key)."""

    def __init__(self, spec: PodSpec, first_index: int, sid: int) -> None:
        self.spec, self.first_index, self.id = spec, first_index, sid
        self.variants: list[Variant] = []
        self.alternatives: list[list[Variant]] = []  # per level, a variant per volume topology alternative (when more than one)
        self.exhausted = False
        self.inverse_owned: list[TopologyGroup] = []  # inverse anti-affinity groups recording where these pods land
        self.counting: list[TopologyGroup] = []  # groups whose selector matches these pods
        self.inverse_selecting: list[TopologyGroup] = []  # other pods' required anti-affinity that excludes these pods
        self.topology_version = -1
        self.request_vector: tuple[int, ...] = ()
        self.current_volumes: frozenset[tuple[str, str]] = frozenset()  # the next pod's (driver, claim) volumes (CSINode limits)
