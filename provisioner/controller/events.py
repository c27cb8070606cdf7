"""Kubernetes Events on pods no NodePool can schedule: one per pod and reason, ever.

Deduplication does not depend on memory alone: the event's name is derived from the pod's uid
and the reason's cause (`cause`: figures, details and clause order dropped, so a reason quoting
changing numbers, e.g. when 500 nodes appear, stays one cause), so a restarted advisor (or a
second replica) that tries again gets 409
AlreadyExists and counts that as done. While the pod stays Pending the event is refreshed
(count and lastTimestamp) every `refresh_after` seconds, before the API server's event TTL
(1 h by default) can expire it; if it expired anyway, it is created again under the same name.
"""
from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from .batcher import TokenBucket
from .kube import ApiError, KubeApi
from .metrics import fold_reason

log = logging.getLogger(__name__)

REASON = "NoNodePoolCanSchedule"
COMPONENT = "karpenter-platform-provisioner"
REPORTING_CONTROLLER = "karpenter-platform.io/provisioner"
MESSAGE_MAX = 1024  # the API server truncates longer messages; we cut them ourselves, visibly
NAME_MAX = 253


_DETAILS = re.compile(r"\s*\([^()]*\)")


def cause(reason: str) -> str:
    """What a reason says is wrong, without what it measures: per clause (one per NodePool) the
    figures folded, parenthesised details dropped and only the head before the first ", " kept;
    clauses sorted. "needs 96 cpu (3 nodes)" and "needs 128 cpu (500 nodes)" are one cause, so a
    cluster that grows does not re-announce every pending pod."""
    heads = {fold_reason(_DETAILS.sub("", clause)).split(", ", 1)[0] for clause in str(reason).split("; ")}
    return " | ".join(sorted(heads))


def dedup_key(uid: str, reason: str) -> tuple[str, str]:
    return uid, cause(reason)


def event_name(pod_name: str, uid: str, reason: str) -> str:
    """`<pod>.<16 hex>` (kubelet's `<pod>.<hex>` shape), the same for the same pod uid and reason."""
    digest = hashlib.sha256("\0".join(dedup_key(uid, reason)).encode()).hexdigest()[:16]
    return f"{pod_name[: NAME_MAX - 17]}.{digest}"


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def message(reason: str) -> str:
    text = f"no NodePool can schedule this pod: {reason}"
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 3] + "..."


def event_body(pod: dict, reason: str, now: float, *, instance: str, count: int = 1) -> dict:
    """A core/v1 Event on `pod` (what `kubectl describe pod` and `kubectl get events` show)."""
    meta = pod["metadata"]
    stamp = timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(meta["name"], meta["uid"], reason), "namespace": meta["namespace"],
                     "labels": {"app.kubernetes.io/managed-by": COMPONENT}},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                           "uid": meta["uid"]},
        "reason": REASON,
        "message": message(reason),
        "type": "Warning",
        "source": {"component": COMPONENT},
        "reportingComponent": REPORTING_CONTROLLER,
        "reportingInstance": instance,
        "action": "Simulate",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": count,
    }


@dataclass
class Recorded:
    last: float
    count: int | None  # None: the event existed before we saw it (409), its count is unknown


class EventRecorder:
    """Records, deduplicates and rate-limits the events; `record` says what it did."""

    def __init__(self, api: KubeApi, *, bucket: TokenBucket, instance: str, refresh_after: float = 1800.0):
        self.api = api
        self.bucket = bucket
        self.instance = instance
        self.refresh_after = refresh_after
        self._recorded: dict[tuple[str, str], Recorded] = {}

    def record(self, pod: dict, reason: str, now: float) -> str:
        """One of: created, exists, refreshed, deduplicated, rate_limited, failed."""
        key = dedup_key(pod["metadata"]["uid"], reason)
        known = self._recorded.get(key)
        if known is not None and now - known.last < self.refresh_after:
            return "deduplicated"
        if not self.bucket.take(now):
            return "rate_limited"  # not remembered: the next batch tries again
        namespace = pod["metadata"]["namespace"]
        try:
            if known is None:
                return self._create(key, pod, reason, now, count=1)
            return self._refresh(key, known, pod, reason, now)
        except ApiError as exc:
            log.warning("event for pod %s/%s not recorded: %s", namespace, pod["metadata"]["name"], exc)
            return "failed"

    def _create(self, key, pod: dict, reason: str, now: float, *, count: int) -> str:
        body = event_body(pod, reason, now, instance=self.instance, count=count)
        try:
            self.api.create_event(body["metadata"]["namespace"], body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            self._recorded[key] = Recorded(now, None)
            return "exists"
        self._recorded[key] = Recorded(now, count)
        return "created"

    def _refresh(self, key, known: Recorded, pod: dict, reason: str, now: float) -> str:
        meta = pod["metadata"]
        patch: dict = {"lastTimestamp": timestamp(now)}
        count = known.count + 1 if known.count is not None else None
        if count is not None:
            patch["count"] = count
        try:
            self.api.patch_event(meta["namespace"], event_name(meta["name"], meta["uid"], reason), patch)
        except ApiError as exc:
            if exc.status != 404:
                raise
            # Expired by the API server's event TTL while the pod stayed Pending: same name again.
            self._create(key, pod, reason, now, count=count or 1)
            return "refreshed"
        self._recorded[key] = Recorded(now, count)
        return "refreshed"

    def forget_except(self, live: set[tuple[str, str]]) -> None:
        """Drop what we remember of pods (or reasons) no longer unschedulable: memory stays
        bounded by the pending set, and a later recurrence is still deduplicated by name."""
        for key in [k for k in self._recorded if k not in live]:
            del self._recorded[key]

    def remembered(self) -> int:
        return len(self._recorded)
