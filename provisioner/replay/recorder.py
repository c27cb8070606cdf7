"""`serve --record-trace PATH`: the advisor's watches written as a replay trace.

What the advisor watches becomes trace events, `at` counted from when recording started:
NodePools, EC2NodeClasses, NodeOverlays and PodDisruptionBudgets as `apply` (and `delete` for the
last two); Pods as `apply` of the pod (node binding, status and server fields dropped: the replay
places it) when first seen, and `delete` when deleted or finished (Succeeded/Failed). The objects
present when recording starts are applied at `0s`. Nodes and NodeClaims are left to the replay.

The advisor does not watch Deployments or Jobs, so pods are recorded as bare pods: a replay of
such a trace recreates no evicted pod by itself, the recorded creations that followed real
evictions do. For workload-level traces use `trace --from-audit-log`.

The file is rewritten whole (atomically) at most every `flush_every` seconds and at shutdown;
recording stops at MAX_EVENTS events.
"""
from __future__ import annotations

import logging
import os
import tempfile
import threading
from typing import Any, Callable

import yaml

from .trace import MAX_EVENTS

log = logging.getLogger(__name__)
APPLIED = {"NodePool", "EC2NodeClass", "NodeOverlay", "PodDisruptionBudget"}
DELETABLE = {"NodeOverlay", "PodDisruptionBudget"}


def _clean(obj: dict, kind: str, api_version: str) -> dict:
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k)}
    spec = dict(obj.get("spec") or {})
    if kind == "Pod":
        spec.pop("nodeName", None)
    return {"apiVersion": api_version, "kind": kind, "metadata": keep, "spec": spec}


def _key(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name")


def _finished(obj: dict) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class TraceRecorder:
    def __init__(self, path: str, clock: Callable[[], float], flush_every: float = 60.0) -> None:
        self.path = path
        self.clock = clock
        self.start = clock()
        self.flush_every = flush_every
        self.last_flush = self.start
        self.events: list = []
        self.pods: set = set()  # pods applied and not yet deleted
        self.lock = threading.Lock()
        self.full = False

    def _at(self) -> str:
        # never backwards (a wall clock may step back): the trace's times must not decrease
        self.last_at = max(getattr(self, "last_at", 0.0), self.clock() - self.start)
        return f"{self.last_at:.3f}s"

    def _add(self, event: dict) -> None:
        if len(self.events) >= MAX_EVENTS:
            if not self.full:
                log.warning("trace recording stopped at %d events", MAX_EVENTS)
                self.full = True
            return
        self.events.append(event)

    def record(self, kind: str, api_version: str, change: str, obj: dict) -> None:
        """One watch event (ADDED, MODIFIED, DELETED; a full list is ADDED for each item)."""
        if not isinstance(obj, dict):
            return
        with self.lock:
            ns, name = _key(obj)
            if kind == "Pod":
                key = (ns, name)
                gone = change == "DELETED" or _finished(obj)
                if gone and key in self.pods:
                    self.pods.discard(key)
                    self._add({"at": self._at(), "delete": {"kind": "Pod", "namespace": ns, "name": name}})
                elif not gone and key not in self.pods:
                    self.pods.add(key)
                    self._add({"at": self._at(), "apply": _clean(obj, "Pod", "v1")})
            elif kind in APPLIED:
                if change == "DELETED":
                    if kind in DELETABLE:
                        self._add({"at": self._at(), "delete": {"kind": kind, "namespace": ns, "name": name}})
                else:
                    self._add({"at": self._at(), "apply": _clean(obj, kind, api_version)})
            if self.clock() - self.last_flush >= self.flush_every:
                self._flush_locked()

    def wrap(self, sink: Callable[..., object]) -> Callable[..., None]:
        """A reflector sink that records each message, then passes it on."""
        def recording_sink(message: Any) -> None:
            kind = getattr(message, "kind", None)
            if kind is not None:
                if hasattr(message, "items"):
                    for item in message.items:
                        self.record(kind.kind, kind.api_version, "ADDED", item)
                elif hasattr(message, "type"):
                    self.record(kind.kind, kind.api_version, message.type, message.object)
            sink(message)
        return recording_sink

    def _flush_locked(self) -> None:
        self.last_flush = self.clock()
        folder = os.path.dirname(os.path.abspath(self.path))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp", encoding="utf-8") as handle:
            yaml.safe_dump({"events": self.events}, handle, sort_keys=False)
        os.replace(handle.name, self.path)

    def flush(self) -> None:
        with self.lock:
            self._flush_locked()
