"""SimulateScheduling (pkg/controllers/disruption/helpers.go) on the provisioner's scheduling
core: the candidates' pods, with the pending pods and those of nodes already being deleted, are
scheduled on the remaining nodes first and on new NodeClaims otherwise."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import AbstractSet, Callable, Iterable, Sequence

from kubefacts import labels as L
from ..planning import plan_rounds, scheduling_nodes, scheduling_view
from ..models import Inputs, Pod, PodSpec
from ..result import SimulationResult
from ..scheduling.existing import ExistingNodes, prepare_grouped, prepare_nodes
from ..scheduling.nodeclaim import ExistingTarget, NodeClaim
from ..scheduling.scheduler import Abandoned
from ..scheduling.shared import SharedSetup
from ..scheduling.requirements import Requirement, Requirements
from ..state.cluster import Cluster, pods_by_node
from ..state.statenode import StateNode
from ..memo import remember, same
from .pass_memo import AVOIDING_LIMIT, PassMemo
from .pdb import Limits
from .types import Candidate


def marked_for_deletion(node: StateNode) -> bool:
    """StateNode.MarkedForDeletion for a snapshot: the Node or its NodeClaim is being deleted."""
    claim = node.claim
    return node.deleting or (claim is not None and (claim.deleting or claim.terminating))


@dataclass
class Simulation:
    errors: dict = field(default_factory=dict)  # moved pod name -> why it would not schedule
    nodeclaims: list = field(default_factory=list)  # result.NodeClaimResult of the new NodeClaims
    uninitialized: str | None = None  # a node not yet initialized that would receive moved pods
    abandoned: str | None = None  # why the run ended early: no command can come of it (run's ceiling)


class _Hopeless:
    """Ends a consolidation simulation once computeConsolidation can no longer make a command of
    it: a candidate's pod placed on a node not yet initialized, a second new NodeClaim (it replaces
    with at most one), or the one new NodeClaim's options all priced at or above the candidates'
    price (RemoveInstanceTypeOptionsByPriceAndMinValues keeps only cheaper types, each at its worst
    launch price, and a NodeClaim's options only narrow as pods land). Pending pods and those of
    deleting nodes count too: they are in the same run."""

    def __init__(self, ceiling: float, moved: AbstractSet[str], uninitialized: set[str], result: SimulationResult) -> None:
        self.ceiling, self.moved, self.uninitialized, self.result = ceiling, moved, uninitialized, result

    def __call__(self, target: ExistingTarget | NodeClaim, pods: Sequence[Pod], claims: Sequence[NodeClaim]) -> None:
        if isinstance(target, NodeClaim):
            if len(self.result.nodeclaims) + len(claims) > 1:  # earlier rounds' NodeClaims are in the result
                raise Abandoned("removing it would need more than one new node; consolidation replaces with at most one")
            if target.template.price_floor(target.options) >= self.ceiling:
                raise Abandoned(f"no cheaper replacement exists for ${self.ceiling:.4f}/h")
        elif target.name in self.uninitialized and any(p.name in self.moved for p in pods):
            raise Abandoned(f"its pods would move to node {target.name}, which is not initialized yet")


class _Unbound:
    """A node's currently reschedulable pod models (one pass's Simulator.reschedulable list, kept
    while it is the same object) and the unbound Pods made of them, per set of nodes avoided."""
    __slots__ = ("models", "names", "pod_names", "specs", "index", "variants")

    def __init__(self, models: list[Pod]) -> None:
        self.models = models
        self.names = [m.name for m in models]
        self.pod_names = frozenset(self.names)
        # The specs as Simulator._avoiding tells them apart, each the first of its kind: by content
        # (PodSpec.key: one signature to the scheduler, so one copy serves them all) or by itself
        # (no key, or volume topology).
        self.specs: list[PodSpec] = []
        self.index: list[int] = []  # each model's spec, in `specs`
        at: dict[object, int] = {}
        for m in models:
            spec = m.spec
            kind = spec.key if spec.key and not spec.volume_alternatives else id(spec)  # (a key is a tuple)
            i = at.get(kind)
            if i is None:
                i = at[kind] = len(self.specs)
                self.specs.append(spec)
            self.index.append(i)
        self.variants: dict[frozenset, list[Pod]] = {}

    def avoiding(self, avoid: frozenset, copy: Callable[[PodSpec, frozenset], PodSpec]) -> list[Pod]:
        """The Pods kept off the nodes in `avoid`, `copy` (Simulator._avoiding) giving the copy of
        each kind of spec once: the copy it gives every spec of that kind (specs of one PodSpec.key
        are one signature to the scheduler; once its content-keyed cache starts over it makes a
        second, equal copy, as it does for the specs of a later pass)."""
        pods = self.variants.get(avoid)
        if pods is None:
            copies = [copy(spec, avoid) for spec in self.specs]
            pods = list(map(Pod, self.names, map(copies.__getitem__, self.index)))
            if len(self.variants) >= 4:  # the nodes avoided change as nodes age past consolidateAfter
                self.variants.pop(next(iter(self.variants)))
            self.variants[avoid] = pods
        return pods


class Simulator:
    """Schedules with a fixed snapshot; one instance serves every candidate set of a pass."""

    def __init__(self, snap: Cluster, pools: list, notes: Iterable[str], limits: Limits,
                 memo: PassMemo | None = None, by_node: dict | None = None) -> None:
        """memo: what earlier passes over this changing cluster derived (a replay's), or None;
        by_node: the pods' PodInfos per node (state.cluster.pods_by_node), when already grouped."""
        base = snap.inputs
        assert base is not None  # read with the scheduling models (state.reader, not facts=True)
        self.snap, self.inputs, self.pools, self.notes, self.limits = snap, base, pools, list(notes), limits
        self.groups = snap.node_pods  # the pods grouped by node, when the reader kept them (state.cluster.NodePods)
        self._models: dict | None = None
        self._pod_models: dict | None = None
        self.info_by_node: dict = by_node if by_node is not None else pods_by_node(snap)
        self.deleting = {n.name for n in snap.nodes if marked_for_deletion(n)}
        self.initialized = {n.name for n in snap.nodes
                            if n.claim is None or n.labels.get(L.INITIALIZED) == "true"}
        # The memo's pod facts hold only without PDBs (with them, reschedulability depends on their status).
        self.memo = memo if memo is not None and not limits.pdbs else None
        self._copies: dict = self.memo.avoiding if self.memo is not None else {}  # by content key
        self._own: dict = {}  # by id(spec), this pass only
        self._reschedulable: dict = {}  # node name -> its currently reschedulable pod models
        self._unbound: dict = {}  # (node name, avoided hostnames) -> those pods unbound, for a simulation
        self._pod_names: dict = {}  # node name -> the names of those pods (_movable sets it)
        self.under_consolidate_after = self._under_consolidate_after(snap)
        # The cluster without the nodes being deleted, prepared for the scheduler once: each run
        # only leaves its candidates out (what plan_pools would do on inputs without them).
        deleting, groups = self.deleting, self.groups
        rest = Inputs(nodepools=base.nodepools, nodeclasses=base.nodeclasses, pods=[],
                      bound_pods=([] if groups is not None else  # (the groups have them)
                                  [p for p in base.bound_pods if p.node_name not in deleting] if deleting else base.bound_pods),
                      daemonsets=base.daemonsets, nodes=[n for n in base.nodes if n.name not in deleting],
                      overlays=base.overlays, namespaces=base.namespaces)
        kept = memo.prepared if memo is not None else None
        if groups is None:
            nodes, bound, _, _ = scheduling_view(rest)
            self.prepared = prepare_nodes(nodes, bound, base.daemonsets, kept)
        else:
            # scheduling_view's bound pods, grouped: each node's whole group (none of these nodes
            # is deleting, so `rest` has all its pods; `rest` has no NodeClaims, so each StateNode
            # has its Node's name and no pod is renamed), numbered in their order (prepare_grouped).
            nodes, _, _ = scheduling_nodes(rest)
            by_node = {node.name: (g.bound, g.order) for node in nodes if (g := groups.get(node.name)) is not None}
            self.prepared = prepare_grouped(nodes, by_node, base.daemonsets, kept)
        self.existing = ExistingNodes(self.prepared)
        self.uninitialized = {p.node.name for p in self.prepared} - self.initialized  # for _Hopeless
        self.shared = SharedSetup()

    @property
    def models(self) -> dict:
        """The bound pods' models by name."""
        if self._models is None:
            self._models = {p.name: p for p in self.inputs.bound_pods}
        return self._models

    @property
    def pod_models(self) -> dict:
        """Pending and bound pods' models by name (read only for a replacement's pods)."""
        if self._pod_models is None:
            self._pod_models = {**{p.name: p for p in self.inputs.pods}, **self.models}
        return self._pod_models

    def _movable(self, node_names: Iterable[str], avoid: frozenset = frozenset()) -> list[Pod]:
        """The currently reschedulable pods of these nodes, unbound (CurrentlyReschedulablePods),
        kept off the nodes in `avoid`."""
        out: list[Pod] = []
        memo = self.memo
        for name in sorted(node_names):
            key = (name, avoid)
            pods = self._unbound.get(key)
            if pods is None:  # the same Pods serve every simulation of the pass (none changes them)
                models = self.reschedulable(name)
                kept = memo.unbound.get(name) if memo is not None else None
                if kept is None or kept.models is not models:
                    kept = _Unbound(models)
                    if memo is not None:
                        memo.unbound[name] = kept
                pods = kept.avoiding(avoid, self._avoiding)  # and so in later passes, while the node's pods are the same
                self._unbound[key] = pods
                self._pod_names[name] = kept.pod_names
            out.extend(pods)
        return out

    def reschedulable(self, name: str) -> list:
        """The models of a node's currently reschedulable pods, in pod order; once per pass (the
        PDBs' limits do not change while a pass simulates)."""
        found = self._reschedulable.get(name)
        if found is None:
            if self.groups is not None:  # NodePods.models: the models of its infos, by name as below
                group = self.groups.get(name)
                infos, models = (group.infos, group.models) if group is not None else ([], [])
            else:
                infos = self.info_by_node.get(name, [])
                models = [self.models.get(info.name) for info in infos]
            kept = self.memo.reschedulable.get(name) if self.memo is not None else None
            if kept is not None and same(kept[0], infos) and same(kept[1], models):
                found = kept[2]  # the same list object, so _movable's memo holds too
            else:
                found = [model for info, model in zip(infos, models)
                         if model is not None and self.limits.is_currently_reschedulable(info)]
                if self.memo is not None:
                    self.memo.reschedulable[name] = (infos, models, found)
            self._reschedulable[name] = found
        return found

    def _avoiding(self, spec: PodSpec, hostnames: frozenset) -> PodSpec:
        """`spec` with a required node affinity excluding these hostnames (one copy per spec, so
        replicas stay grouped)."""
        if not hostnames:
            return spec
        # Specs of equal canonical content (PodSpec.key) are one signature to the scheduler, so
        # they share one copy, kept across passes by the memo; a spec with volume topology is
        # keyed by itself, for this pass only (an id may be reused once its spec is gone).
        key: tuple[object, frozenset]
        if spec.key and not spec.volume_alternatives:
            copies, key = self._copies, (spec.key, hostnames)
        else:
            copies, key = self._own, (id(spec), hostnames)
        copy = copies.get(key)
        if copy is None:
            away = Requirement.of(L.HOSTNAME, "NotIn", sorted(hostnames))
            terms = spec.required_terms or (Requirements(),)
            copy = remember(copies, key, replace(spec, required_terms=tuple(t.merged(Requirements([away])) for t in terms),
                                                 key=(spec.key, "not-on", tuple(sorted(hostnames)))), AVOIDING_LIMIT)
        return copy

    def _under_consolidate_after(self, snap: Cluster) -> frozenset:
        """Nodes whose NodeClaim is still inside its NodePool's consolidateAfter (no Consolidatable
        condition while initialized, consolidation enabled and consolidateAfter > 0): the scheduler
        puts no candidate's pod there (scheduler.go isUnderConsolidateAfter; pending pods and pods of
        deleting nodes may go)."""
        out = set()
        for node in snap.nodes:
            claim, pool = node.claim, snap.pools.get(node.labels.get(L.NODEPOOL, ""))
            if (claim is None or claim.synthesized or pool is None or not pool.consolidate_after
                    or node.labels.get(L.INITIALIZED) != "true" or claim.consolidatable):
                continue
            out.add(node.labels.get(L.HOSTNAME, node.name))
        return frozenset(out)

    def run(self, candidates: Iterable[Candidate], consolidation: bool = True,
            ceiling: float | None = None) -> Simulation:
        """consolidation: IsConsolidationSimulation, which keeps the candidates' pods off nodes
        still inside consolidateAfter (drift simulates without it). ceiling: the candidates' price,
        when only a command matters: the run ends as soon as it cannot give one (_Hopeless), and
        the Simulation says why in `abandoned`."""
        names = {c.name for c in candidates}
        base = self.inputs
        moved = self._movable(names, self.under_consolidate_after if consolidation else frozenset())
        from_deleting = self._movable(self.deleting - names)
        pending = list(base.pods) + moved + from_deleting
        # the names in `moved` (one candidate's kept set as it is: nothing below changes it)
        candidate_pods = (self._pod_names[next(iter(names))] if len(names) == 1
                          else frozenset().union(*map(self._pod_names.__getitem__, names)))
        result = SimulationResult(pods=len(pending))
        watch = None
        if ceiling is not None:
            watch = _Hopeless(ceiling, candidate_pods, self.uninitialized, result)
        try:
            result = plan_rounds(result, self.existing.without(names), pending, self.pools, base.daemonsets,
                                 self.notes, self.shared, watch)
        except Abandoned as gone:
            return Simulation(abandoned=str(gone))
        moved_names = candidate_pods | {p.name for p in from_deleting}
        sim = Simulation(nodeclaims=list(result.nodeclaims))
        for u in result.unschedulable:
            if u.pod in moved_names:  # pending pods may stay pending (AllNonPendingPodsScheduled)
                sim.errors[u.pod] = u.reason
        for node, pods in sorted(result.existing.items()):
            if node not in self.initialized and candidate_pods.intersection(pods):
                sim.uninitialized = node
                break
        return sim
