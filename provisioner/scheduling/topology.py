"""Topology spread, pod affinity and anti-affinity bookkeeping (topology.go, topologygroup.go).

A TopologyGroup counts, per domain of its topology key, the pods its selector matches. Pods
that own a group are steered by it; pods a group selects are counted in it. Counting is O(1) per
placement; choosing a domain scans only the key's few domains (hostname is special-cased).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from kubefacts import labels as L
from .requirements import Requirement, Requirements
from .taints import Taint, Toleration, untolerated

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import InstanceType, LabelSelector, NodePool, PodAffinityTerm, PodSpec

SPREAD, AFFINITY, ANTI = "topology spread", "pod affinity", "pod anti-affinity"
_NONE: frozenset[str] = frozenset()
# topology domain value -> the taint sets of the NodePools offering it
DomainTaints = dict[str, list[tuple[Taint, ...]]]


class NodeFilter:
    """Which nodes count for a spread constraint (TopologyNodeFilter): the owner's node selector
    and required node-affinity terms (nodeAffinityPolicy=Honor) and tolerations (nodeTaintsPolicy=Honor)."""
    __slots__ = ("requirements", "taint_policy", "affinity_policy", "tolerations", "trivial", "key")

    def __init__(self, node_selector: dict[str, str], required_terms: Sequence[Requirements],
                 tolerations: tuple[Toleration, ...], taint_policy: str, affinity_policy: str) -> None:
        selector = Requirements.from_labels(node_selector)
        terms = required_terms
        self.requirements = tuple(selector.merged(t) for t in terms) if terms else (selector,)
        self.taint_policy, self.affinity_policy = taint_policy, affinity_policy
        self.tolerations = tolerations
        no_affinity = affinity_policy != "Honor" or all(len(r) == 0 for r in self.requirements)
        self.trivial = no_affinity and taint_policy != "Honor"
        self.key = (tuple(repr(r) for r in self.requirements), taint_policy, affinity_policy, self.tolerations)

    def matches(self, taints: Iterable[Taint], requirements: Requirements,
                allow_undefined: frozenset[str] = _NONE) -> bool:
        if self.affinity_policy == "Honor" and not any(
                requirements.is_compatible(r, allow_undefined) for r in self.requirements):
            return False
        if self.taint_policy == "Honor" and untolerated(taints, self.tolerations) is not None:
            return False
        return True


class TopologyGroup:
    __slots__ = ("kind", "key", "namespaces", "selector", "max_skew", "min_domains", "node_filter",
                 "counts", "nonempty", "hostname", "id", "version")

    def __init__(self, kind: str, key: str, namespaces: frozenset[str] | None, selector: LabelSelector,
                 max_skew: int = 2**31 - 1, min_domains: int | None = None,
                 node_filter: NodeFilter | None = None) -> None:
        self.kind, self.key, self.namespaces, self.selector = kind, key, namespaces, selector
        self.max_skew, self.min_domains, self.node_filter = max_skew, min_domains, node_filter
        self.counts: dict[str, int] = {}
        self.nonempty = 0  # domains with a count above zero
        self.hostname = key == L.HOSTNAME
        self.id = 0
        # Bumped whenever next_domains could answer differently: any count change for spread,
        # a domain turning non-empty (or appearing) for affinity and anti-affinity.
        self.version = 0

    def selects(self, spec: PodSpec) -> bool:
        return (self.namespaces is None or spec.namespace in self.namespaces) and self.selector.matches(spec.labels)

    def register(self, domain: str) -> None:
        if domain not in self.counts:
            self.counts[domain] = 0
            if not self.hostname:
                self.version += 1

    def record(self, domain: str, n: int = 1) -> None:
        before = self.counts.get(domain, 0)
        # On the hostname key a node only compares its own count (which changes with a commit to
        # that node, tracked per NodeClaim by the scheduler) and whether any domain is non-empty.
        if before == 0:
            self.nonempty += 1
            if not self.hostname or self.nonempty == 1:
                self.version += 1
        elif self.kind is SPREAD and not self.hostname:
            self.version += 1
        self.counts[domain] = before + n

    def next_domains(self, pod_domains: Requirement, node_domains: Requirement, self_selecting: bool) -> Requirement:
        if self.kind is SPREAD:
            return self._spread(pod_domains, node_domains, self_selecting)
        if self.kind is AFFINITY:
            return self._affinity(pod_domains, node_domains, self_selecting)
        return self._anti(pod_domains, node_domains)

    def _spread(self, pod_domains: Requirement, node_domains: Requirement, self_selecting: bool) -> Requirement:
        counts, extra = self.counts, 1 if self_selecting else 0
        if self.hostname and not node_domains.complement and len(node_domains.values) == 1:
            # A new hostname can always be created, so the global minimum for hostname is zero.
            (host,) = node_domains.values
            if counts.get(host, 0) + extra <= self.max_skew:
                return Requirement.in_(self.key, host)
            return Requirement(self.key, False)
        minimum = self._min_count(pod_domains)
        best, best_count = None, None
        candidates = sorted(node_domains.values) if not node_domains.complement else sorted(counts)
        for domain in candidates:
            count = counts.get(domain)
            if count is None or not node_domains.has(domain):
                continue
            count += extra
            if count - minimum <= self.max_skew and (best_count is None or count < best_count):
                best, best_count = domain, count
        return Requirement(self.key, False) if best is None else Requirement.in_(self.key, best)

    def _min_count(self, pod_domains: Requirement) -> int:
        if self.hostname:
            return 0
        supported = [c for d, c in self.counts.items() if pod_domains.has(d)]
        if self.min_domains is not None and len(supported) < self.min_domains:
            return 0
        return min(supported) if supported else 2**31 - 1

    def _any_compatible(self, pod_domains: Requirement) -> bool:
        if pod_domains.complement and not pod_domains.values and pod_domains.gte is None and pod_domains.lte is None:
            return self.nonempty > 0
        return any(c > 0 and pod_domains.has(d) for d, c in self.counts.items())

    def _affinity(self, pod_domains: Requirement, node_domains: Requirement, self_selecting: bool) -> Requirement:
        counts = self.counts
        if self.hostname and not node_domains.complement and len(node_domains.values) == 1:
            (host,) = node_domains.values
            if not pod_domains.has(host):
                return Requirement(self.key, False)
            if counts.get(host, 0) > 0:
                return Requirement.in_(self.key, host)
            if self_selecting and (self.nonempty == 0 or not self._any_compatible(pod_domains)):
                return Requirement.in_(self.key, host)
            return Requirement(self.key, False)
        options = [d for d in sorted(counts) if counts[d] > 0 and pod_domains.has(d) and node_domains.has(d)]
        if options:
            return Requirement(self.key, False, frozenset(options))
        if self_selecting and (self.nonempty == 0 or not self._any_compatible(pod_domains)):
            # Bootstrap: the first pod of a self-affine group picks a domain (the in-flight node's if it can).
            for domain in sorted(counts):
                if pod_domains.has(domain) and node_domains.has(domain):
                    return Requirement.in_(self.key, domain)
            for domain in sorted(counts):
                if pod_domains.has(domain):
                    return Requirement.in_(self.key, domain)
        return Requirement(self.key, False)

    def _anti(self, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        counts = self.counts
        if self.hostname and not node_domains.complement and len(node_domains.values) == 1:
            (host,) = node_domains.values
            return Requirement.in_(self.key, host) if counts.get(host, 0) == 0 else Requirement(self.key, False)
        options = frozenset(d for d, c in counts.items() if c == 0 and node_domains.has(d) and pod_domains.has(d))
        return Requirement(self.key, False, options)

    def describe(self) -> str:
        return f"unsatisfiable {self.kind} constraint, key={self.key}"


class Topology:
    """All topology groups of one scheduling run, shared by existing nodes and new NodeClaims."""

    def __init__(self, domain_universe: Callable[[str], DomainTaints]) -> None:
        # domain_universe(key) -> {domain: [taint tuples]} for the key (TopologyDomainGroup).
        self._universe = domain_universe
        self.groups: dict[tuple[object, ...], TopologyGroup] = {}
        self.inverse: dict[tuple[str, frozenset[str] | None, LabelSelector], TopologyGroup] = {}
        self.version = 0  # bumped when a group is created, so per-pod caches of groups refresh
        # what gives the existing nodes' (labels, taints, requirements, bound pod specs), asked only
        # when a group is first made (a run without topology never needs them)
        self.existing_from: Callable[[], list[tuple[dict[str, str], tuple[Taint, ...], Requirements, list[PodSpec]]]] = list

    def group(self, kind: str, key: str, namespaces: frozenset[str] | None, selector: LabelSelector,
              owner_spec: PodSpec, max_skew: int = 2**31 - 1, min_domains: int | None = None,
              node_filter: NodeFilter | None = None) -> TopologyGroup:
        ident = (kind, key, namespaces, selector, max_skew, None if node_filter is None else node_filter.key)
        found = self.groups.get(ident)
        if found is not None:
            return found
        tg = TopologyGroup(kind, key, namespaces, selector, max_skew, min_domains, node_filter)
        # Affinity groups have a zero-value node filter whose taint policy is not "Ignore", so like
        # spread constraints with nodeTaintsPolicy=Honor they only see domains the owner tolerates.
        self._register_universe(tg, owner_spec, node_filter is None or node_filter.taint_policy == "Honor")
        self._count_existing(tg)
        tg.id = len(self.groups) + len(self.inverse)
        self.groups[ident] = tg
        self.version += 1
        return tg

    def inverse_group(self, term: PodAffinityTerm, owner_spec: PodSpec) -> TopologyGroup:
        ident = (term.topology_key, term.namespaces, term.selector)
        found = self.inverse.get(ident)
        if found is None:
            found = TopologyGroup(ANTI, term.topology_key, term.namespaces, term.selector)
            self._register_universe(found, owner_spec, True)
            found.id = len(self.groups) + len(self.inverse)
            self.inverse[ident] = found
            self.version += 1
        return found

    def _register_universe(self, tg: TopologyGroup, owner_spec: PodSpec, honor_taints: bool) -> None:
        for domain, taint_sets in self._universe(tg.key).items():
            if not honor_taints or any(untolerated(t, owner_spec.tolerations) is None for t in taint_sets):
                tg.register(domain)

    def _count_existing(self, tg: TopologyGroup) -> None:
        for labels, taints, reqs, specs in self.existing_from():
            if tg.node_filter is not None and not tg.node_filter.matches(taints, reqs):
                continue
            domain = labels.get(tg.key)
            if domain is None:
                continue
            tg.register(domain)
            n = sum(1 for spec in specs if tg.selects(spec))
            if n:
                tg.record(domain, n)

    def add_requirements(self, groups: Iterable[TopologyGroup], strict: Requirements, node_reqs: Requirements,
                         spec: PodSpec) -> tuple[list[Requirement], None] | tuple[None, TopologyGroup]:
        """Requirements the topology adds for a pod on a node; (None, group) when unsatisfiable."""
        added = []
        for tg in groups:
            pod_domains = strict.get(tg.key)
            node_domains = node_reqs.get(tg.key)
            domains = tg.next_domains(pod_domains, node_domains, tg.kind is not ANTI and tg.selects(spec))
            if not domains.complement and not domains.values:
                return None, tg
            added.append(domains)
        return added, None

    def record(self, counting: Iterable[TopologyGroup], owned_inverse: Iterable[TopologyGroup], taints: Iterable[Taint],
               reqs: Requirements, n: int, allow_undefined: frozenset[str] = _NONE) -> None:
        for tg in counting:
            if tg.node_filter is not None and not tg.node_filter.trivial and \
                    not tg.node_filter.matches(taints, reqs, allow_undefined):
                continue
            domains = reqs.get(tg.key)
            if domains.complement:
                continue
            if tg.kind is ANTI:
                for domain in domains.values:  # block every domain the node might end up in
                    tg.record(domain, n)
            elif len(domains.values) == 1:
                (domain,) = domains.values
                tg.record(domain, n)
        for tg in owned_inverse:
            domains = reqs.get(tg.key)
            if not domains.complement:
                for domain in domains.values:
                    tg.record(domain, n)


def domain_universe(nodepools: Iterable[tuple[NodePool, Iterable[InstanceType]]], key: str) -> DomainTaints:
    """Every value the NodePools (with their instance types) allow for a label, with the taints of
    the NodePools offering it (buildDomainGroups / TopologyDomainGroup)."""
    domains: DomainTaints = {}
    for nodepool, types in nodepools:
        base = Requirements(nodepool.requirements.values())
        base.add(*Requirements.from_labels(nodepool.labels).values())
        pool_req = base.raw(key)
        values: set[str] = set()
        for it in types:
            type_req = it.requirements.raw(key)
            if type_req is not None:
                merged = type_req if pool_req is None else type_req.intersection(pool_req)
                if not merged.complement:
                    values |= merged.values
        if pool_req is not None and pool_req.operator() == "In":
            values |= pool_req.values
        for value in values:
            taint_sets = domains.setdefault(value, [])
            if not nodepool.taints:
                taint_sets[:] = [()]  # an untainted pool makes the domain reachable by every pod
            elif not taint_sets or taint_sets[0]:
                taint_sets.append(nodepool.taints)
    return domains
