"""What a series of disruption passes over one changing cluster (a replay) keeps from one pass to
the next: facts derived from a node and its pods, reused while the models they were derived from
are the very same objects (the replay hands each pass the same pod models while a pod is
unchanged, replay.disruption.PassCache) and the node reads the same. Upstream's disruption
controller likewise reads an informer cache kept up to date, not the whole cluster afresh.

Only facts that depend on nothing else are kept: with PodDisruptionBudgets present a pod's
reschedulability depends on them too, and the memo is not consulted.
"""
from __future__ import annotations

from typing import Any

from ..memo import forget_absent
from ..scheduling.existing import PreparedMemo
from .share import Share

AVOIDING_LIMIT = 20_000  # avoid-copies kept (memo.remember starts over past it)


class PassMemo:
    def __init__(self) -> None:
        self.prepared = PreparedMemo()  # the existing nodes as the scheduler prepares them
        self.reschedulable: dict[str, tuple[list[Any], list[Any], list[Any]]] = {}  # node -> (infos, models, movable models)
        self.unbound: dict[str, Any] = {}  # node -> simulation._Unbound: its movable models, avoided -> unbound Pods
        self.avoiding: dict[tuple[Any, frozenset[str]], Any] = {}  # (PodSpec.key, hostnames) -> the copy kept off them
        self.pod_facts: dict[str, tuple[list[Any], Any]] = {}  # node -> (its PodInfos, new_candidate's facts of them)
        self.share: Share | None = None  # single-node consolidation's candidates shared with a twin process
        self.types: dict[int, tuple[list[Any], dict[str, Any]]] = {}  # id(instance types) -> (a copy, them by name)

    def forget(self, present: set[str]) -> None:
        """Drop what was kept for nodes no longer present, once they outnumber those that are."""
        for table in (self.reschedulable, self.unbound, self.pod_facts):
            forget_absent(table, present)
