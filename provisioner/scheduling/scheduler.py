"""The provisioning scheduler (pkg/controllers/provisioning/scheduling/scheduler.go).

Pods are queued largest CPU first, then memory; each is placed on the first existing node that
fits (initialized nodes first, then by name), else on an in-flight NodeClaim of this round, tried
fewest pods first as `add` re-sorts them, else on a new NodeClaim from the NodePools by weight
(equal weights by name, descending, as `OrderByWeight` does). Preferences are relaxed one step at
a time on failure, and failed pods are retried while a pass makes progress. Identical pods form
runs: a run of pods without topology of their own is placed in bulk (as many as one-by-one
placement would put on the same target), which yields the same plan as one-by-one placement.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kubefacts import labels as L
from ..memo import remember
from kubefacts.quantity import format_quantity
from .existing import ExistingNodes, PreparedNode, prepare_nodes
from .gcpause import gc_paused
from .inflight import InflightClaims
from .instance_selection import Template
from .nodeclaim import WELL_KNOWN, ExistingTarget, NodeClaim, Proposal, hostname_requirement, merge_topology
from .plan import PlannedNodeClaim, Results, build_results
from .preferences import Signature, StaticCheck, Variant, initial, relax, skip_flagged
from .requirements import Requirements
from .taints import ports_conflict
from .shared import SharedSetup, templates_for
from .taints import Taint
from .topology import AFFINITY, ANTI, SPREAD, DomainTaints, NodeFilter, Topology, TopologyGroup, domain_universe

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import DaemonSet, ExistingNode, InstanceType, NodePool, Pod, PodSpec

# Below this, and outside a disruption pass (which shares the comparison between its
# simulations), proposing to every node costs less than comparing them all up front.
_SKIP_MIN_NODES = 32
NO_NODEPOOLS = "no NodePool can launch nodes (none given, or their requirements filtered out every instance type)"

_Pools = Iterable[tuple["NodePool", Sequence["InstanceType"]]]
_Target = ExistingTarget | NodeClaim
# a target that takes pods of the variant with this proposal, or why none does
_Placed = tuple[_Target, Proposal, None, Variant] | tuple[None, None, str, None]
# resource -> what is left of a NodePool's limits: ints, but L.NODES (in thousandths) is None when the
# NodePool limits no node count, a correlation by key that a dict's value type cannot hold
_Limits = dict[str, Any]
# what a run of pods of one shape shares: (Variant.id, .dead, .taint_cache, .template_cache)
_Shared = tuple[int, dict[str, Any], dict[int, "Taint | None"], dict[int, StaticCheck]]


class Abandoned(Exception):
    """Raised by a run's `watch` to end it early: its caller already knows the answer."""


# (the target that just took pods, those pods, the run's new NodeClaims so far): raises Abandoned to end the run
Watch = Callable[[_Target, Sequence["Pod"], Sequence[NodeClaim]], None]


class Scheduler:
    def __init__(self, nodepools: _Pools, daemonsets: Iterable[DaemonSet] = (), nodes: Iterable[ExistingNode] = (),
                 bound_pods: Iterable[Pod] = (), notes: Iterable[str] = (),
                 prepared: Iterable[PreparedNode] | ExistingNodes | None = None,
                 shared: SharedSetup | None = None, watch: Watch | None = None) -> None:
        """nodepools: [(NodePool, [InstanceType])]; notes: why some NodePools were left out.

        prepared: the existing nodes as [PreparedNode] or ExistingNodes (scheduling.existing),
        instead of `nodes` and `bound_pods`; shared: a SharedSetup reused by every run of a
        disruption pass; watch: called after each placement, it may end the run by raising
        Abandoned (a consolidation simulation whose outcome can no longer be a command).
        """
        self.watch = watch
        self.nodepools = [(np, its) for np, its in nodepools if np.replicas is None]  # static pools never scale up
        self.daemonsets = list(daemonsets)
        if prepared is None:
            prepared = prepare_nodes(nodes, bound_pods, self.daemonsets)
        self.existing = prepared if isinstance(prepared, ExistingNodes) else ExistingNodes(prepared)
        self.shared = shared
        self.notes = list(notes)

    # --- set-up -----------------------------------------------------------------------------------
    def _setup(self, specs: Sequence[PodSpec]) -> None:
        """specs: one per signature of the pods to place."""
        names = {n for s in specs for n in s.requests} | {n for d in self.daemonsets for n in d.spec.requests}
        self.dims = (L.CPU, L.MEMORY, L.PODS) + tuple(sorted(names - {L.CPU, L.MEMORY, L.PODS}))
        if self.shared is not None:  # the same for every run of the pass
            self.templates, skipped, self.tolerate_prefer_no_schedule = self.shared.templates(
                self.nodepools, self.dims, self.daemonsets)
        else:
            self.templates, skipped, self.tolerate_prefer_no_schedule = templates_for(
                self.nodepools, self.dims, self.daemonsets)
        self.notes.extend(skipped)
        # (topology version, namespace, labels) -> (counting, inverse) groups
        self._selecting: dict[tuple[int, str, tuple[tuple[str, str], ...]],
                              tuple[list[TopologyGroup], list[TopologyGroup]]] = {}
        self.topology = Topology(_universe_lookup(self.nodepools, self.shared))
        self.targets: list[ExistingTarget | None] = []  # the existing nodes' targets, None until proposed to
        self.claims: list[NodeClaim] = []  # the new NodeClaims, their target indices from n_existing on
        self.remaining: dict[str, _Limits] = {t.name: dict(t.limits) for t in self.templates if t.limits}
        for limits in self.remaining.values():
            limits.setdefault(L.NODES, None)
        self._setup_existing()
        self.n_existing = len(self.targets)
        self.inflight = InflightClaims(self.n_existing)
        self.hostnames = 0
        self.shapes: dict[tuple[Any, ...], _Shared] = {}
        self.requirement_shapes: dict[tuple[tuple[str, Any], ...], int] = {}  # canonical requirements -> Variant.merge_id

    def _too_small(self, request: tuple[int, ...]) -> dict[str, Any]:
        """Skip pointers (Variant.dead) over the existing nodes that cannot take one pod of this
        size even before anything lands: what is left of a node only shrinks during a run, so
        `propose` would reject them for good. One comparison per pod shape and pass
        (ExistingNodes.too_small) instead of a proposal per node and simulation."""
        if self.n_existing < _SKIP_MIN_NODES and self.shared is None:
            return {}
        bad = self.existing.too_small(self.dims, request)
        return skip_flagged(bad) if True in bad else {}

    def _setup_existing(self) -> None:
        existing = self.existing
        self.targets.extend([None] * len(existing))  # each made an ExistingTarget when first proposed to
        self.made: list[int] = []  # indices of the existing nodes made targets
        self.topology.existing_from = existing.entries  # a view's list is made when first asked for
        for pool, (capacity, count) in (existing.pools().items() if self.remaining else ()):
            limits = self.remaining.get(pool)
            if limits is None:
                continue
            for k in list(limits):  # existing capacity counts against the NodePool's limits
                if k != L.NODES:
                    limits[k] -= capacity.get(k, 0)
            if limits.get(L.NODES) is not None:
                limits[L.NODES] -= 1000 * count
        for _, node, spec, term in existing.anti():  # required anti-affinity of running pods blocks their domains
            tg = self.topology.inverse_group(term, spec)
            if term.topology_key in node.labels:
                tg.record(node.labels[term.topology_key])

    def _target(self, i: int) -> ExistingTarget:
        target = self.targets[i]
        if target is None:
            target = self.targets[i] = self.existing.order[i].target(self.dims, i)
            self.made.append(i)
        return target

    # --- variants and topology groups -----------------------------------------------------------
    def _variant(self, sig: Signature, level: int) -> Variant | None:
        if level < len(sig.variants):
            return sig.variants[level]
        if sig.exhausted:
            return None
        made = None
        if level == 0:
            if self.shared is not None:  # the same spec's first level is the same in every run of a pass
                constraints, made = self.shared.first_level(sig.spec)
            else:
                constraints = initial(sig.spec)
        else:
            step = relax(sig.variants[-1].constraints, self.tolerate_prefer_no_schedule)
            if step is None:
                sig.exhausted = True
                return None
            constraints = step[0]
        volumes = sig.spec.volume_alternatives
        alternatives = [Variant(sig, level, constraints, -1, volume, made) for volume in volumes or (None,)]
        for variant in alternatives:
            self._attach_groups(variant)
            self._share_by_shape(variant)
        sig.variants.append(alternatives[0])
        if len(alternatives) > 1:
            sig.alternatives.append(alternatives)
        return alternatives[0]

    def _share_by_shape(self, variant: Variant) -> None:
        """Pods that differ only in labels or names place alike: let them share what was learnt
        (targets that can never take them, per-NodePool checks, requirement merges)."""
        spec = variant.sig.spec
        shape = (self._canonical(variant.requirements), self._canonical(variant.strict), variant.tolerations,
                 variant.sig.request_vector, tuple(id(g) for g in variant.groups),
                 tuple(id(g) for g in variant.sig.inverse_selecting), spec.host_ports,
                 tuple(g.selects(spec) for g in variant.groups if g.kind is not ANTI))  # only self-selection matters
        shared = self.shapes.get(shape)
        if shared is None:
            if self.shared is not None:  # the NodePools' answers hold for every run of the pass
                taints, statics = self.shared.statics((shape[0], shape[2], shape[3], self.dims), self.templates)
            else:
                taints, statics = {}, {}
            shared = self.shapes[shape] = (len(self.shapes), self._too_small(variant.sig.request_vector), taints, statics)
        variant.id, variant.dead, variant.taint_cache, variant.template_cache = shared
        # A target's merge with a variant depends on the variant's requirements only, which far
        # fewer variants differ in than in shape (each Deployment's own anti-affinity group makes
        # its own shape): keyed by shape, every existing node held one merged copy per pending
        # Deployment (2,000 nodes x 200 Deployments outgrew the advisor's 1 Gi).
        variant.merge_id = self.requirement_shapes.setdefault(shape[0], len(self.requirement_shapes))

    def _canonical(self, reqs: Requirements) -> tuple[tuple[str, Any], ...]:
        return self.shared.canonical(reqs) if self.shared is not None else reqs.canonical()

    def _attach_groups(self, variant: Variant) -> None:
        spec, c, topo = variant.sig.spec, variant.constraints, self.topology
        groups = []
        for tsc in c.spread:
            selector = tsc.selector
            for key in tsc.match_label_keys:
                if key in spec.labels and not selector.nothing:
                    selector = selector.with_expression(key, "In", [spec.labels[key]])
            node_filter = NodeFilter(spec.node_selector, c.required_terms, c.tolerations,
                                     tsc.node_taints_policy, tsc.node_affinity_policy)
            groups.append(topo.group(SPREAD, tsc.topology_key, frozenset({spec.namespace}), selector, spec,
                                     tsc.max_skew, tsc.min_domains, node_filter))
        for kind, terms in ((AFFINITY, spec.affinity + tuple(t for _, t in c.affinity_preferred)),
                            (ANTI, spec.anti_affinity + tuple(t for _, t in c.anti_preferred))):
            for term in terms:
                groups.append(topo.group(kind, term.topology_key, term.namespaces, term.selector, spec))
        variant.groups = groups
        # Hostname counts only grow, so these checks reject a node for good in O(1), before any merge.
        variant.host_checks = [(g, 0 if g.kind is ANTI else g.max_skew - (1 if g.selects(spec) else 0))
                               for g in groups + variant.sig.inverse_selecting
                               if g.hostname and (g.kind is ANTI or g.kind is SPREAD)]
        variant.monotone = all(g.kind is ANTI or (g.kind is SPREAD and g.hostname) for g in groups)
        variant.free = not groups and not spec.host_ports and not variant.sig.inverse_selecting

    def _refresh_counting(self, sig: Signature) -> None:
        version = self.topology.version
        if sig.topology_version != version:
            spec = sig.spec
            # Whether a group selects a pod depends on its namespace and labels only, which many
            # signatures share (they differ in requests or constraints).
            key = (version, spec.namespace, tuple(sorted(spec.labels.items())))
            found = self._selecting.get(key)
            if found is None:
                found = remember(self._selecting, key, ([g for g in self.topology.groups.values() if g.selects(spec)],
                                                        [g for g in self.topology.inverse.values() if g.selects(spec)]))
            sig.counting, sig.inverse_selecting = list(found[0]), list(found[1])
            sig.topology_version = version

    # --- placing ----------------------------------------------------------------------------------
    def _add(self, variant: Variant, k: int) -> _Placed:
        targets, topology, n_existing = self.targets, self.topology, self.n_existing
        i = variant.next_alive(0)
        while i < n_existing:
            placed = self._propose_existing(targets[i] or self._target(i), variant, k, topology)
            if placed is not None:
                return placed
            i = variant.next_alive(i + 1)
        if self.inflight.claims:
            found = self.inflight.add(variant, k, topology)
            if found is not None:
                return found[0], found[1], None, variant
        return self._new_nodeclaim([variant], k)

    @staticmethod
    def _propose_existing(target: ExistingTarget, variant: Variant, k: int, topology: Topology) -> _Placed | None:
        """Propose the variant's pods to an existing node: placed, or None (the node is dropped
        for this variant when its refusal is final)."""
        proposal = target.propose(variant, k, topology)
        if proposal.n:
            return target, proposal, None, variant
        if proposal.permanent:
            variant.kill(target.index)
        return None

    def _add_alternatives(self, alternatives: list[Variant], k: int) -> _Placed:
        """`add` for a pod whose volumes give several topology alternatives: every target in the
        usual order, each alternative in turn on it (CanAdd: the first that fits narrows the node),
        in-flight NodeClaims scanned plainly. (target, proposal, error, the alternative used)."""
        topology = self.topology
        for i in range(self.n_existing):
            for variant in alternatives:
                if variant.next_alive(i) != i:
                    continue
                placed = self._propose_existing(self._target(i), variant, k, topology)
                if placed is not None:
                    return placed
        for claim in self.inflight.in_order():
            for variant in alternatives:
                proposal = claim.propose(variant, k, topology)
                if proposal.n:
                    return claim, proposal, None, variant
        return self._new_nodeclaim(alternatives, k)

    def _new_nodeclaim(self, alternatives: list[Variant], k: int) -> _Placed:
        """A new NodeClaim from the first NodePool that takes the pod, each volume topology
        alternative tried in turn on it: (claim, proposal, error, the alternative used)."""
        if not self.templates:
            return None, None, "; ".join(self.notes) or NO_NODEPOOLS, None
        request, errors = alternatives[0].sig.request_vector, []
        for tpl in self.templates:
            why = ""
            for variant in alternatives:  # the error of the last alternative tried, as CanAdd returns
                static = self._template_static(variant, tpl)
                if static[0] is not None:
                    why = static[0]
                    continue
                tried = self._try_template(variant, tpl, k, request, static[1], static[2])
                if isinstance(tried, str):
                    why = tried
                    continue
                return tried[0], tried[1], None, variant
            errors.append(f'nodepool "{tpl.name}": {why}')
        return None, None, "; ".join(errors + self.notes), None

    def _template_static(self, variant: Variant, tpl: Template) -> StaticCheck:
        """Reasons that never change for this variant and NodePool: taints, requirements, size."""
        key = tpl.index
        cache = variant.template_cache
        if key not in cache:
            taint = variant.template_taint(tpl)
            if taint is not None:
                cache[key] = (f"did not tolerate taint {taint}", None, None)
            else:
                err = tpl.requirements.compatible(variant.requirements, WELL_KNOWN)
                if err is not None:
                    cache[key] = (f"incompatible requirements, {err}", None, None)
                else:
                    merged = tpl.requirements.merged(variant.requirements)
                    changed = [k for k in variant.requirements.keys() if merged.raw(k) != tpl.requirements.raw(k)]
                    options = tpl.restrict(tpl.all, merged, changed)
                    if len(options) and not len(tpl.fitting(options, variant.sig.request_vector)):
                        options = options[:0]
                    cache[key] = (None, merged, options)
        return cache[key]

    def _try_template(self, variant: Variant, tpl: Template, k: int, request: tuple[int, ...], merged: Requirements,
                      options: npt.NDArray[np.int64]) -> tuple[NodeClaim, Proposal] | str:
        """A new NodeClaim from this NodePool that takes the variant (with its proposal), or why not."""
        unlimited = options
        limits = self.remaining.get(tpl.name)
        if limits is not None:
            nodes_left = limits.get(L.NODES)
            if nodes_left is not None and nodes_left <= 0:
                return "node limits have been exhausted for nodepool"
            limited = tpl.within_limits(options, limits)
            if len(options) and not len(limited):
                return "all available instance types exceed limits for nodepool"
            options = limited
        hostname = f"hostname-placeholder-{self.hostnames + 1:04d}"
        reqs = merged.copy()
        host_req = hostname_requirement(hostname)
        if variant.requirements.has(L.HOSTNAME) and not variant.requirements.get(L.HOSTNAME).has(hostname):
            return "incompatible requirements, a new node cannot have the requested hostname"
        reqs.add(host_req)
        narrowed = merge_topology(self.topology, variant, reqs, WELL_KNOWN)
        if narrowed[0] is None:
            return narrowed[2]
        reqs, topo_changed, _ = narrowed
        if topo_changed:
            options = tpl.restrict(options, reqs, topo_changed)
            unlimited = tpl.restrict(unlimited, reqs, topo_changed)
        if variant.sig.spec.host_ports and len(options):
            options = options[[not ports_conflict(variant.sig.spec.host_ports, tpl.daemon_ports[i])
                               for i in options.tolist()]]
        fitting = tpl.fitting(options, request)
        if not len(fitting):
            if limits is not None and len(tpl.fitting(unlimited, request)):
                left = ", ".join(f"{k}={format_quantity(k, max(v, 0))}" for k, v in limits.items() if v is not None)
                return f"every instance type large enough would exceed the nodepool's limits (remaining {left})"
            return tpl.diagnose(tpl.within_limits(tpl.all, limits) if limits else tpl.all, reqs, request,
                                variant.sig.spec.requests)
        if tpl.has_min_values and (err := tpl.min_values_error(fitting, reqs)):
            return err
        self.hostnames += 1
        claim = NodeClaim(tpl, hostname, reqs, fitting, self.n_existing + len(self.claims), len(self.dims))
        if limits is not None:  # pessimistically reserve the largest option (subtractMax)
            for key, amount in tpl.max_capacity(fitting).items():
                limits[key] -= amount
            if limits.get(L.NODES) is not None:
                limits[L.NODES] -= 1000
        n = 1
        if variant.free and k > 1 and not tpl.has_min_values:
            n = min(k, tpl.max_count(fitting, claim.used, request))
        total = [n * r for r in request]
        proposal = Proposal(n, requirements=reqs, options=tpl.fitting(fitting, total) if n > 1 else fitting)
        self.claims.append(claim)
        return claim, proposal

    def _try_schedule(self, sig: Signature, k: int) -> tuple[_Target, Variant, Proposal] | str:
        """Where pods of this signature go (relaxing its preferences as needed), or why nowhere."""
        level, err = 0, ""
        while True:
            variant = self._variant(sig, level)
            if variant is None:
                return err
            placed = self._add_alternatives(sig.alternatives[level], k) if sig.alternatives else self._add(variant, k)
            if placed[1] is not None:
                return placed[0], placed[3], placed[1]
            err = placed[2]
            level += 1

    # --- the loop ---------------------------------------------------------------------------------
    def solve(self, pods: Sequence[Pod]) -> Results:
        with gc_paused():
            return self._solve(pods)

    def _solve(self, pods: Sequence[Pod]) -> Results:
        signatures: dict[Any, Signature] = {}
        try:
            return self._run(pods, signatures)
        finally:
            for sig in signatures.values():  # a variant refers to its signature: break the cycle, so the
                sig.variants, sig.alternatives = [], []  # run's objects are freed without the collector

    def _run(self, pods: Sequence[Pod], signatures: dict[Any, Signature]) -> Results:
        members: list[list[Pod]] = []  # each signature's pods, in the order given
        spec: PodSpec | None = None
        bucket: list[Pod] = []
        for index, pod in enumerate(pods):
            if pod.spec is not spec:  # replicas share their spec object and usually come together
                spec = pod.spec
                sig = signatures.get(spec.key)
                if sig is None:
                    sig = signatures[spec.key] = Signature(spec, index, len(signatures))
                    members.append([])
                bucket = members[sig.id]
            bucket.append(pod)
        self._setup([sig.spec for sig in signatures.values()])
        for sig in signatures.values():
            sig.request_vector = tuple(sig.spec.requests.get(d, 0) for d in self.dims)
        # Largest CPU first, then memory (queue.go); ties keep identical pods together, in the order
        # given: sorting the signatures and keeping each one's pods in order is sorting the pods by
        # (-cpu, -memory, the signature's first index, the pod's index), one run per signature.
        ordered = sorted(signatures.values(), key=lambda s: (-s.request_vector[0], -s.request_vector[1], s.first_index))
        for sig in signatures.values():  # owners of required anti-affinity exist before anything lands
            for term in sig.spec.anti_affinity:
                sig.inverse_owned.append(self.topology.inverse_group(term, sig.spec))
        inverse = list(self.topology.inverse.values())  # complete: only the loop above creates them
        for sig in signatures.values():
            # A variant needs the inverse groups selecting its pods; the groups counting them are
            # gathered once all first variants (and their groups) exist, when the pods are placed.
            sig.inverse_selecting = [g for g in inverse if g.selects(sig.spec)] if inverse else []
            if _has_topology(sig.spec):
                self._variant(sig, 0)
            # A spec without topology terms creates no group: its first variant is made when its
            # pods are first placed (a consolidation simulation often ends before that).
        runs = [(sig, members[sig.id]) for sig in ordered]
        errors: dict[Pod, str] = {}
        progress = True
        while runs and progress:
            progress = False
            failed: list[tuple[Signature, list[Pod]]] = []
            for sig, run in runs:
                i = 0
                while i < len(run):
                    self._refresh_counting(sig)
                    # Pods with volumes go one at a time: each brings its own claims to a node's CSI limits.
                    sig.current_volumes = run[i].volumes
                    placed = self._try_schedule(sig, 1 if run[i].volumes else len(run) - i)
                    if isinstance(placed, str):
                        failed.append((sig, run[i:]))
                        for pod in run[i:]:
                            errors[pod] = placed
                        break
                    target, variant, proposal = placed
                    n = proposal.n
                    if isinstance(target, NodeClaim):
                        before = len(target.pods)
                        target.commit(variant, proposal, run[i:i + n], self.topology)
                        self.inflight.reorder(target, before or None, sig.counting + sig.inverse_owned)
                    else:
                        target.commit(variant, proposal, run[i:i + n], self.topology)
                    if self.watch is not None:
                        self.watch(target, run[i:i + n], self.claims)
                    if errors:  # pods placed in a later pass failed in an earlier one
                        for pod in run[i:i + n]:
                            errors.pop(pod, None)
                    i += n
                    progress = True
            runs = failed
        existing = [self._target(i) for i in sorted(self.made)]  # the others took no pod
        targets: list[_Target] = [*existing, *self.claims]
        return build_results(targets, pods, errors)


def _has_topology(spec: PodSpec) -> bool:
    """Whether the spec's variants own topology groups (spread, pod affinity or anti-affinity)."""
    return bool(spec.spread or spec.affinity or spec.affinity_preferred or spec.anti_affinity
                or spec.anti_affinity_preferred)


def _universe_lookup(nodepools: Sequence[tuple[NodePool, Sequence[InstanceType]]],
                     shared: SharedSetup | None) -> Callable[[str], DomainTaints]:
    """The topology's domain universe per key, cached for one run. A closure rather than a bound
    method of the Scheduler, so the Topology does not refer back to it: a reference cycle would
    leave every run's objects to the garbage collector instead of freeing them at once."""
    cache: dict[str, DomainTaints] = {}

    def universe(key: str) -> DomainTaints:
        if key not in cache:
            cache[key] = shared.universe(nodepools, key) if shared is not None else domain_universe(nodepools, key)
        return cache[key]
    return universe


def schedule(pods: Sequence[Pod], nodepools: _Pools, daemonsets: Iterable[DaemonSet] = (),
             nodes: Iterable[ExistingNode] = (), bound_pods: Iterable[Pod] = (), notes: Iterable[str] = ()) -> Results:
    return Scheduler(nodepools, daemonsets, nodes, bound_pods, notes).solve(pods)


__all__ = ["Scheduler", "Results", "PlannedNodeClaim", "schedule"]
