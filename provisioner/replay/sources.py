"""Where traces come from: a synthetic diurnal trace, and a Kubernetes audit log.

Synthetic (docs/replay.md "The synthetic trace"): `services` Deployments whose replicas follow a
daily curve (low at 03:00 UTC, high at 15:00, changed every hour), `cronjobs` CronJobs (every
15 minutes, pods running 5 minutes), and a batch burst of Jobs every day at 02:00 and 14:00. The
random choices (pod sizes, curve phases) come from `seed` only.

Audit log: JSON lines as EKS sends the API server's audit events to CloudWatch Logs (each line an
audit.k8s.io/v1 Event, or a CloudWatch export record whose `message` holds one). Creates,
updates/patches, scale-subresource changes and deletes of Deployments, StatefulSets, Jobs and
CronJobs become apply/scale/delete events; pods and nodes are left to the replay. Events logged
at level Metadata carry no object: a create or update without one is skipped and counted. A Job's
runFor is its status.completionTime - status.startTime when the log holds the Job's status
update, else `default_run_for`.
"""
from __future__ import annotations

import json
import math
import random
from datetime import datetime
from typing import Any, Iterable

from ..errors import InputError
from ..state.objects import go_duration
from .workloads import RUN_FOR_ANNOTATION

RESOURCES = {("apps", "deployments"): "Deployment", ("apps", "statefulsets"): "StatefulSet",
             ("batch", "jobs"): "Job", ("batch", "cronjobs"): "CronJob"}
API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}
MAX_LINES = 5_000_000


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def _deployment(name: str, namespace: str, replicas: int, cpu: str, memory: str, app: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"containers": [{"name": "app", "image": "app",
                                                           "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}}


def _job_spec(cpu: str, memory: str, parallelism: int, completions: int, run_for: str) -> dict:
    return {"parallelism": parallelism, "completions": completions, "backoffLimit": 0,
            "template": {"metadata": {"annotations": {RUN_FOR_ANNOTATION: run_for}},
                         "spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "job",
                                  "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}


def synthetic(days: float = 7, services: int = 8, pods: int = 200, cronjobs: int = 2, bursts: int = 2,
              burst_jobs: int = 5, namespace: str = "default", seed: int = 0) -> dict:
    """A diurnal trace: `pods` is the services' mean total replicas."""
    rng = random.Random(seed)
    sizes = [("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi")]
    hours = int(math.ceil(days * 24))
    events: list[dict[str, Any]] = []
    plans = []
    for i in range(services):
        cpu, mem = rng.choice(sizes)
        mean = max(1, pods // max(services, 1))
        phase = rng.uniform(-1.5, 1.5)
        plans.append((f"svc-{i}", mean, phase))
        events.append({"at": "0s", "apply": _deployment(f"svc-{i}", namespace, mean, cpu, mem, f"svc-{i}")})
    for j in range(cronjobs):
        cpu, mem = rng.choice(sizes)
        events.append({"at": "0s", "apply": {
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"cron-{j}", "namespace": namespace},
            "spec": {"schedule": f"{(j * 7) % 15}-59/15 * * * *", "concurrencyPolicy": "Forbid",
                     "jobTemplate": {"spec": _job_spec(cpu, mem, 1, 1, "5m")}}}})
    for h in range(1, hours):
        for name, mean, phase in plans:
            # Daily curve: trough at 03:00, peak at 15:00 (UTC), +-60 % of the mean.
            level = 1 + 0.6 * math.sin(2 * math.pi * (h - 9 + phase) / 24)
            events.append({"at": _duration(h * 3600), "scale": {"kind": "Deployment", "namespace": namespace,
                                                                "name": name, "replicas": max(1, round(mean * level))}})
        if h % 24 in (2, 14)[:bursts]:
            for k in range(burst_jobs):
                cpu, mem = rng.choice(sizes)
                events.append({"at": _duration(h * 3600 + 60 * k), "apply": {
                    "apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": f"burst-{h}-{k}", "namespace": namespace},
                    "spec": _job_spec(cpu, mem, 4, 8, f"{rng.randint(5, 40)}m")}})
    events.sort(key=lambda e: _seconds(e["at"]))
    return {"events": events}


def _seconds(text: str) -> float:
    return go_duration(text) or 0.0


def _time(text: object, origin: str, line: int) -> float:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"requestReceivedTimestamp {text!r} is not an RFC 3339 time", origin=f"{origin}:{line}") from None


def _clean(obj: dict, kind: str) -> dict:
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"apiVersion": API_VERSIONS[kind], "kind": kind, "metadata": keep, "spec": obj.get("spec") or {}}


def _audit_events(files: Iterable[tuple[str, Iterable[str]]]) -> list:
    out = []
    for origin, lines in files:
        for n, line in enumerate(lines, start=1):
            if n > MAX_LINES:
                raise InputError(f"more than {MAX_LINES:,} lines; refused", origin=origin)
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:
                raise InputError(f"not a JSON line: {exc}", origin=f"{origin}:{n}") from None
            if isinstance(event, dict) and isinstance(event.get("message"), str):  # a CloudWatch Logs record
                try:
                    event = json.loads(event["message"])
                except ValueError as exc:
                    raise InputError(f"message is not a JSON audit event: {exc}", origin=f"{origin}:{n}") from None
            if not isinstance(event, dict) or event.get("kind") != "Event":
                continue
            out.append((origin, n, event))
    return out


def from_audit_log(files: Iterable[tuple[str, Iterable[str]]], default_run_for: str = "10m") -> tuple[dict, dict]:
    """(trace, counts) from [(origin, lines)]; counts say what was kept and skipped."""
    events = _audit_events(files)
    counts = {"events": 0, "skipped_without_object": 0, "skipped_failed": 0, "skipped_owned": 0}
    records = []
    seen = set()
    for origin, n, ev in events:
        ref = ev.get("objectRef") or {}
        kind = RESOURCES.get((ref.get("apiGroup") or "", ref.get("resource") or ""))
        if kind is None or ev.get("stage", "ResponseComplete") != "ResponseComplete":
            continue
        if (ev.get("auditID"), ev.get("stage")) in seen:
            continue
        seen.add((ev.get("auditID"), ev.get("stage")))
        code = (ev.get("responseStatus") or {}).get("code", 200)
        if not isinstance(code, int) or code >= 300:
            counts["skipped_failed"] += 1
            continue
        records.append((_time(ev.get("requestReceivedTimestamp") or ev.get("stageTimestamp"), origin, n), origin, n,
                        kind, ref, ev))
    records.sort(key=lambda r: r[0])
    run_for: dict = {}
    for _, _, _, kind, ref, ev in records:  # a Job's run time from its status updates
        obj = ev.get("responseObject") or {}
        status = obj.get("status") if isinstance(obj, dict) else None
        if kind == "Job" and isinstance(status, dict) and status.get("completionTime") and status.get("startTime"):
            took = _time(status["completionTime"], "", 0) - _time(status["startTime"], "", 0)
            run_for[(ref.get("namespace") or "default", ref.get("name"))] = _duration(max(took, 1))
    start = records[0][0] if records else 0.0
    out: list[dict[str, Any]] = []
    for when, _origin, _n, kind, ref, ev in records:
        at = _duration(when - start)
        ns, name, verb, sub = ref.get("namespace") or "default", ref.get("name"), ev.get("verb"), ref.get("subresource")
        if not name:
            obj = ev.get("responseObject") or ev.get("requestObject") or {}
            name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        if not name:
            continue
        if sub == "status":
            continue
        if sub == "scale" and verb in ("update", "patch"):
            obj = ev.get("responseObject") or ev.get("requestObject") or {}
            replicas = ((obj.get("spec") or {}).get("replicas")) if isinstance(obj, dict) else None
            if isinstance(replicas, int) and kind in ("Deployment", "StatefulSet"):
                out.append({"at": at, "scale": {"kind": kind, "namespace": ns, "name": name, "replicas": replicas}})
                counts["events"] += 1
            continue
        if sub:
            continue
        if verb == "delete":
            out.append({"at": at, "delete": {"kind": kind, "namespace": ns, "name": name}})
            counts["events"] += 1
            continue
        if verb not in ("create", "update", "patch"):
            continue
        obj = ev.get("responseObject") if verb != "create" or not isinstance(ev.get("requestObject"), dict) \
            else ev.get("requestObject")
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            counts["skipped_without_object"] += 1
            continue
        owners = (obj.get("metadata") or {}).get("ownerReferences") or []
        if any(isinstance(o, dict) and o.get("kind") == "CronJob" for o in owners):
            counts["skipped_owned"] += 1  # its CronJob is replayed and creates it
            continue
        clean = _clean({**obj, "metadata": {**(obj.get("metadata") or {}), "name": name, "namespace": ns}}, kind)
        item: dict[str, Any] = {"at": at, "apply": clean}
        if kind in ("Job", "CronJob"):
            item["runFor"] = run_for.get((ns, name), default_run_for)
        out.append(item)
        counts["events"] += 1
    # A delete of an object created before the log began cannot be replayed: drop it.
    known, kept = set(), []
    for item in out:
        body = item.get("apply") or item.get("scale") or item["delete"]  # each item is one of the three
        key = (body["kind"], (body.get("metadata") or body).get("namespace", "default"),
               (body.get("metadata") or body).get("name"))
        if "apply" in item:
            known.add(key)
        elif key not in known:
            counts.setdefault("skipped_unknown_object", 0)
            counts["skipped_unknown_object"] += 1
            continue
        if "delete" in item:
            known.discard(key)
        kept.append(item)
    counts["events"] = len(kept)
    return {"events": kept}, counts
