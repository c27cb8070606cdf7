"""The advisor's state machine: watch messages in, plans, metrics and events out.

Single-threaded and clock-free (every method takes `now`): the reflector threads only put
messages on a queue, and `loop.run` feeds them here. Tests drive it directly.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterable

from ..errors import InputError
from .batcher import Batcher
from .cache import Malformed, ObjectCache, normalize, uid_of
from .events import EventRecorder, dedup_key
from .kinds import POD, WATCHED, Kind
from .metrics import Metrics, pool_teams
from .pending import is_unschedulable, pod_key, plan_input
from .reflector import Change, Failure, Message, Replace
from .worker import PlanTimeout

log = logging.getLogger(__name__)

PlanFn = Callable[[list], dict]
ConsolidateFn = Callable[[list, float], dict]  # (objects, now)
ValidateFn = Callable[[dict], None]


def core_label(obj: dict) -> str:
    """How the core's loader names an object in an InputError (`Kind "ns/name"`)."""
    meta = obj["metadata"]
    name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    return f'{obj["kind"]} "{name}"'


# The core's per-NodePool reasons that go away on their own once capacity is freed.
TRANSIENT_MARKERS = ("limits have been exhausted", "exceed limits")


def is_permanent(reason: str) -> bool:
    """True when no NodePool could ever take the pod. The core joins one clause per NodePool
    (`nodepool "a": why; nodepool "b": why`); a single clause about a NodePool's limits means
    the pod fits once room is freed, so it is not permanent."""
    return not any(marker in clause for clause in reason.split("; ") for marker in TRANSIENT_MARKERS)


def plan_excluding(plan: PlanFn, objects: list, limit: int) -> tuple[dict, list[str]]:
    """`plan(objects)`, leaving out each object the core rejects (it names it) and trying again,
    at most `limit` times: one bad object must not blind the advisor to the whole cluster."""
    excluded: list[str] = []
    while True:
        try:
            return plan(objects), excluded
        except InputError as exc:
            culprit = exc.obj
            remaining = [o for o in objects if core_label(o) != culprit]
            if not culprit or len(remaining) == len(objects) or len(excluded) >= limit:
                raise
            log.warning("left out of the plan: %s", exc)
            excluded.append(culprit)
            objects = remaining


class Controller:
    def __init__(self, *, plan: PlanFn, metrics: Metrics, recorder: EventRecorder | None,
                 batcher: Batcher | None = None, validate: ValidateFn | None = None,
                 kinds: Iterable[Kind] = WATCHED, resync: float = 300.0, exclusion_limit: int = 20,
                 consolidate: ConsolidateFn | None = None, consolidation_interval: float = 60.0):
        self.plan = plan
        self.metrics = metrics
        self.recorder = recorder  # None: metrics-only mode, nothing is written to the cluster
        self.batcher = batcher or Batcher()
        self.validate = validate
        self.kinds = tuple(kinds)
        self.resync = resync
        self.exclusion_limit = exclusion_limit
        self.cache = ObjectCache()
        self.synced: set[str] = set()
        self.pending: set[str] = set()  # uids of unschedulable pods
        self.last_plan: float | None = None
        self.last_result: dict | None = None
        # The consolidation what-if looks at the whole cluster: it runs after any change, at most
        # once per interval (a busy cluster changes every second).
        self.consolidate = consolidate
        self.consolidation_interval = consolidation_interval
        self.cluster_changed = True
        self.last_consolidation: float | None = None
        self.last_consolidation_result: dict | None = None

    @property
    def ready(self) -> bool:
        """Every kind listed once: before that, a plan would miss NodePools or nodes."""
        return all(k.kind in self.synced for k in self.kinds)

    # -- watch messages ------------------------------------------------------------------

    def handle(self, message: Message, now: float) -> None:
        if isinstance(message, Failure):
            self.metrics.api_failures.labels(kind=message.kind.kind, operation=message.operation,
                                             code=str(message.status)).inc()
        elif isinstance(message, Replace):
            admitted = [obj for obj in (self._admit(message.kind, item) for item in message.items) if obj is not None]
            self.cache.replace(message.kind.kind, admitted)
            self.synced.add(message.kind.kind)
            self.cluster_changed = True
            if message.kind == POD:
                self.pending = {uid_of(p) for p in admitted if is_unschedulable(p)}
            self._touched(pending_pod=True, now=now)  # after a (re)list, plan once anyway
        elif isinstance(message, Change):
            self._change(message, now)

    def _admit(self, kind: Kind, raw) -> dict | None:
        """The object as cached, or None (skipped, counted, logged) when unusable."""
        try:
            obj = normalize(kind, raw)
            if self.validate is not None:
                self.validate(obj)
            return obj
        except (Malformed, InputError) as exc:
            self.metrics.malformed_objects.labels(kind=kind.kind).inc()
            log.warning("skipped a %s: %s", kind.kind, exc)
            return None

    def _change(self, message: Change, now: float) -> None:
        kind = message.kind
        if message.type not in ("ADDED", "MODIFIED", "DELETED"):
            self.metrics.malformed_objects.labels(kind=kind.kind).inc()
            log.warning("skipped a %s watch event of type %r", kind.kind, message.type)
            return
        obj = self._admit(kind, message.object)
        if obj is None:
            # An update that made the object unusable still means the old version is gone.
            try:
                obj, event_type = normalize(kind, message.object), "DELETED"
            except Malformed:
                return
        else:
            event_type = message.type
        if not self.cache.apply(kind.kind, event_type, obj):
            return
        self.cluster_changed = True
        pending_pod = False
        if kind == POD:
            uid = uid_of(obj)
            pending_pod = uid in self.pending  # before this change...
            if event_type != "DELETED" and is_unschedulable(obj):
                self.pending.add(uid)
            else:
                self.pending.discard(uid)
            pending_pod = pending_pod or uid in self.pending  # ...or after it
        self._touched(pending_pod=pending_pod, now=now)

    def _touched(self, *, pending_pod: bool, now: float) -> None:
        # A change matters when it concerns a pending pod, or when there are pending pods
        # whose plan it may change (a new NodePool, a node going away, a pod leaving a node).
        if pending_pod or self.pending:
            self.batcher.trigger(now)

    # -- batches -------------------------------------------------------------------------

    def _resync_at(self) -> float | None:
        """While pods stay pending, plan again now and then even if nothing changed: events
        get refreshed before they expire, and a refreshed catalog reaches the metrics."""
        return self.last_plan + self.resync if self.pending and self.last_plan is not None else None

    def _consolidation_at(self) -> float | None:
        if self.consolidate is None or not self.cluster_changed:
            return None
        return self.last_consolidation + self.consolidation_interval if self.last_consolidation is not None else 0.0

    def wait(self, now: float) -> float | None:
        """Seconds until something is due (None: nothing scheduled)."""
        due = [d for d in (self.batcher.deadline(), self._resync_at(), self._consolidation_at()) if d is not None]
        return max(0.0, min(due) - now) if due else None

    def tick(self, now: float) -> bool:
        """Plan if a batch (or a resync) is due, then run the consolidation what-if if it is due;
        True if it planned."""
        if not self.ready:
            return False
        resync_at = self._resync_at()
        planned = False
        if self.batcher.due(now) or (resync_at is not None and now >= resync_at):
            self.batcher.close()
            self.reconcile(now)
            planned = True
        consolidation_at = self._consolidation_at()
        if consolidation_at is not None and now >= consolidation_at:
            self.reconsider(now)
        return planned

    def reconsider(self, now: float) -> dict | None:
        """The consolidation what-if on the cached cluster, exported as metrics."""
        self.cluster_changed = False
        self.last_consolidation = now
        consolidate = self.consolidate
        if consolidate is None:  # no what-if configured (tick never gets here then)
            return None
        objects = [obj for k in self.kinds for obj in self.cache.items(k.kind)]
        try:
            result = consolidate(objects, now)
        except PlanTimeout as exc:
            self.metrics.consolidation.runs.labels(result="timeout").inc()
            log.warning("consolidation what-if: %s", exc)
            return None
        except Exception:  # noqa: BLE001 - counted and logged; the advisor keeps running
            self.metrics.consolidation.runs.labels(result="error").inc()
            log.exception("consolidation what-if failed")
            return None
        self.metrics.consolidation.observe(result, result.get("causes") or [])
        self.last_consolidation_result = result
        return result

    def reconcile(self, now: float) -> dict | None:
        pods = [p for p in self.cache.items(POD.kind) if uid_of(p) in self.pending]
        by_key = {pod_key(p): p for p in pods}
        objects = {k.kind: self.cache.items(k.kind) for k in self.kinds}
        started = time.perf_counter()
        try:
            result, _ = plan_excluding(self.plan, plan_input(objects, pods), self.exclusion_limit) if pods else (
                _EMPTY, [])
        except PlanTimeout as exc:
            self.metrics.plans.labels(result="timeout").inc()
            log.warning("plan for %d pending pods: %s", len(pods), exc)
            self.last_plan = now
            return None
        except Exception:  # noqa: BLE001 - a failed plan is counted and logged; the advisor keeps running
            self.metrics.plans.labels(result="error").inc()
            log.exception("plan failed for %d pending pods", len(pods))
            self.last_plan = now
            return None
        self.metrics.plan_duration.observe(time.perf_counter() - started)
        self.metrics.plans.labels(result="ok").inc()
        unschedulable = [u for u in result.get("unschedulable") or [] if isinstance(u, dict)]
        summary = result.get("summary") or {}
        claims = [c for c in result.get("nodeclaims") or [] if isinstance(c, dict)]
        price = summary.get("price_usd_hour")
        self.metrics.observe_plan(
            pending=len(pods), unschedulable_reasons=[str(u.get("reason") or "") for u in unschedulable],
            nodeclaims=claims,
            hourly_price=float(price) if price is not None else sum(float(c.get("price_usd_hour") or 0) for c in claims),
            teams=pool_teams(objects.get("NodePool") or []))
        self._record_events(unschedulable, by_key, now)
        self.last_plan, self.last_result = now, result
        return result

    def _record_events(self, unschedulable: list[dict], by_key: dict[str, dict], now: float) -> None:
        if self.recorder is None:
            return
        live: set[tuple[str, str]] = set()
        for entry in unschedulable:
            pod = by_key.get(str(entry.get("pod")))
            reason = str(entry.get("reason") or "no reason given")
            # Only pods no NodePool can *ever* schedule get an event; a pod waiting for room
            # under a NodePool's limits is not a mistake to point out.
            if pod is None or not is_permanent(reason):
                continue
            live.add(dedup_key(uid_of(pod), reason))
            self.metrics.events.labels(result=self.recorder.record(pod, reason, now)).inc()
        self.recorder.forget_except(live)


_EMPTY: dict = {"nodeclaims": [], "unschedulable": [], "summary": {}}
