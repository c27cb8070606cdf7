"""What the scheduling simulations of one disruption pass share (kubernetes-sigs/karpenter PR
#3271 shares the scheduler's set-up across a pass the same way).

Every simulation of a pass schedules against the same NodePools, instance types and DaemonSets:
their templates (instance types filtered and priced per NodePool, with DaemonSet overhead) and
topology domain universes are the same each time, and are built once here. The existing nodes
are prepared once by the caller (provisioner.scheduling.existing). Only pure, value-keyed caches
live in a template, so sharing one between runs changes no result.
"""
from __future__ import annotations

from .instance_selection import Template
from .topology import domain_universe


class SharedSetup:
    def __init__(self):
        self._templates: dict = {}
        self._universes: dict = {}

    def template(self, nodepool, instance_types, dims: tuple, daemonsets, index: int) -> Template:
        key = (id(nodepool), id(instance_types), dims, tuple(id(d) for d in daemonsets), index)
        found = self._templates.get(key)
        if found is None or found[0] is not nodepool or found[1] is not instance_types:
            # the objects are kept with the template, so their ids cannot be reused meanwhile
            found = self._templates[key] = (nodepool, instance_types, list(daemonsets),
                                            Template(nodepool, instance_types, dims, daemonsets, index))
        return found[3]

    def universe(self, nodepools, key: str) -> dict:
        ident = (tuple((id(np_), id(its)) for np_, its in nodepools), key)
        found = self._universes.get(ident)
        if found is None:
            found = self._universes[ident] = (list(nodepools), domain_universe(nodepools, key))
        return found[1]
