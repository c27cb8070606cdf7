"""What the scheduling simulations of one disruption pass share (kubernetes-sigs/karpenter PR
#3271 shares the scheduler's set-up across a pass the same way).

Every simulation of a pass schedules against the same NodePools, instance types and DaemonSets:
their templates (instance types filtered and priced per NodePool, with DaemonSet overhead) and
topology domain universes are the same each time, and are built once here. The existing nodes
are prepared once by the caller (provisioner.scheduling.existing). Only pure, value-keyed caches
live in a template, so sharing one between runs changes no result.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubefacts.labels import PREFER_NO_SCHEDULE
from ..memo import remember, same
from .instance_selection import Template
from .preferences import Constraints, initial, node_requirements
from .requirements import Requirements
from .taints import Taint
from .topology import domain_universe

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import DaemonSet, InstanceType, NodePool, PodSpec

# a NodePool with the instance types it may launch
_Pools = Sequence[tuple["NodePool", Sequence["InstanceType"]]]
# topology domain value -> the taint sets of the NodePools offering it
_Universe = dict[str, list[tuple[Taint, ...]]]


class SharedSetup:
    def __init__(self) -> None:
        # id(spec) -> (spec, its first level's constraints, (strict, requirements)); the spec is
        # kept so its id is not reused. Variants only read their requirements, never change them.
        self._first: dict[int, tuple[PodSpec, Constraints, tuple[Requirements, Requirements]]] = {}
        self._canonical: dict[int, tuple[Requirements, tuple[tuple[str, Any], ...]]] = {}
        self._ordered: dict[tuple[Any, ...], tuple[list[Any], list[Any], tuple[list[Template], list[str], bool]]] = {}
        self._statics: dict[tuple[Any, ...], tuple[list[Template], dict[int, Taint | None], dict[int, Any]]] = {}
        self._templates: dict[tuple[int, int, tuple[str, ...], tuple[int, ...], int],
                              tuple[NodePool, Sequence[InstanceType], list[DaemonSet], Template]] = {}
        self._universes: dict[tuple[tuple[tuple[int, int], ...], str], tuple[list[tuple[NodePool, Sequence[InstanceType]]],
                                                                           _Universe]] = {}

    def template(self, nodepool: NodePool, instance_types: Sequence[InstanceType], dims: tuple[str, ...],
                 daemonsets: Sequence[DaemonSet], index: int) -> Template:
        key = (id(nodepool), id(instance_types), dims, tuple(id(d) for d in daemonsets), index)
        found = self._templates.get(key)
        if found is None or found[0] is not nodepool or found[1] is not instance_types:
            # the objects are kept with the template, so their ids cannot be reused meanwhile
            found = self._templates[key] = (nodepool, instance_types, list(daemonsets),
                                            Template(nodepool, instance_types, dims, daemonsets, index))
        return found[3]

    def templates(self, nodepools: _Pools, dims: tuple[str, ...], daemonsets: Sequence[DaemonSet]
                  ) -> tuple[list[Template], list[str], bool]:
        """templates_for these NodePools, dimensions and DaemonSets, made once (the objects are
        kept with the answer, so their ids cannot be reused meanwhile)."""
        key = (tuple((id(np_), id(its)) for np_, its in nodepools), dims, tuple(id(d) for d in daemonsets))
        found = self._ordered.get(key)
        if found is None:
            found = self._ordered[key] = (list(nodepools), list(daemonsets), templates_for(nodepools, dims, daemonsets, self))
        return found[2]

    def first_level(self, spec: PodSpec) -> tuple[Constraints, tuple[Requirements, Requirements]]:
        """A spec's unrelaxed constraints and node requirements (preferences.initial,
        node_requirements), made once per pass."""
        found = self._first.get(id(spec))
        if found is None or found[0] is not spec:
            constraints = initial(spec)
            found = self._first[id(spec)] = (spec, constraints, node_requirements(spec, constraints))
        return found[1], found[2]

    def statics(self, key: tuple[Any, ...], templates: Sequence[Template]) -> tuple[dict[int, Taint | None], dict[int, Any]]:
        """The per-NodePool answers that never change for a pod shape (Variant.taint_cache and
        template_cache: the taint it does not tolerate, the merged requirements and the instance
        types left), shared by the runs of a pass. key: (canonical requirements, tolerations,
        requests, dimensions); `templates`: the run's, in order (kept with the answers, so a
        template made anew never meets answers of another)."""
        full = (key, tuple(id(t) for t in templates))
        found = self._statics.get(full)
        if found is None or not same(found[0], templates):
            found = remember(self._statics, full, (list(templates), {}, {}))
        return found[1], found[2]

    def canonical(self, reqs: Requirements) -> tuple[tuple[str, Any], ...]:
        """Requirements.canonical of requirements made by first_level (or any kept alive meanwhile)."""
        found = self._canonical.get(id(reqs))
        if found is None or found[0] is not reqs:
            found = self._canonical[id(reqs)] = (reqs, reqs.canonical())
        return found[1]

    def universe(self, nodepools: _Pools, key: str) -> _Universe:
        ident = (tuple((id(np_), id(its)) for np_, its in nodepools), key)
        found = self._universes.get(ident)
        if found is None:
            found = self._universes[ident] = (list(nodepools), domain_universe(nodepools, key))
        return found[1]


def templates_for(nodepools: Sequence[tuple[NodePool, Sequence[InstanceType]]], dims: tuple[str, ...],
                  daemonsets: Sequence[DaemonSet], shared: SharedSetup | None = None
                  ) -> tuple[list[Template], list[str], bool]:
    """The NodePools' templates in OrderByWeight's order (heavier first; equal weights by name,
    descending: nps[a].Name > nps[b].Name), why any is left out, and whether some NodePool has a
    PreferNoSchedule taint (the last relaxation tolerates them)."""
    ordered = sorted(sorted(nodepools, key=lambda item: item[0].name, reverse=True), key=lambda item: -item[0].weight)
    templates: list[Template] = []
    skipped = []
    for np_, its in ordered:
        if shared is not None:
            tpl = shared.template(np_, its, dims, daemonsets, len(templates))
        else:
            tpl = Template(np_, its, dims, daemonsets, len(templates))
        if len(tpl.types):
            templates.append(tpl)
        else:
            skipped.append(f'nodepool "{np_.name}": {tpl.skip_reason}')
    return templates, skipped, any(t.effect == PREFER_NO_SCHEDULE for np_, _ in ordered for t in np_.taints)
