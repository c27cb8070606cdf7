"""The trace file: schema and validation (docs/replay.md "Trace schema").

    {"events": [{"at": "90m", "apply": {...}, "runFor": "10m"},
                {"at": "2h", "scale": {"kind": "Deployment", "namespace": "default", "name": "web", "replicas": 5}},
                {"at": "3h", "delete": {"kind": "Job", "namespace": "batch", "name": "etl"}},
                {"at": "4h", "interrupt": {"node": "default-00003"}},
                {"at": "5h", "interrupt": {"instanceType": "m5.large", "capacityType": "spot", "fraction": 0.5}}]}

Every error is an InputError naming the trace file and the key path (`events[3].scale.name`).
Events are in non-decreasing `at` order (equal times apply in file order); a trace is bounded
(MAX_EVENTS events, the file at most MAX_BYTES) so a runaway trace is refused, never replayed
for hours.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..disruption.snapshot import go_duration
from ..errors import InputError
from kubefacts.yamlread import Limits, UnsafeInput, load_json_file, load_yaml_file

MAX_EVENTS = 200_000
MAX_BYTES = 64 * 2**20
TRACE_LIMITS = Limits(max_bytes=MAX_BYTES, max_items=MAX_EVENTS)
ACTIONS = ("apply", "scale", "delete", "interrupt")
APPLY_KINDS = {"Deployment": "apps/", "StatefulSet": "apps/", "ReplicaSet": "apps/", "Job": "batch/",
               "CronJob": "batch/", "Pod": "v1", "PodDisruptionBudget": "policy/", "NodePool": "karpenter.sh/",
               "EC2NodeClass": "karpenter.k8s.aws/", "NodeOverlay": "karpenter.sh/"}
SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")
# Deleting a NodePool or node class would delete its NodeClaims outside any disruption reason: not replayed.
DELETABLE = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod", "PodDisruptionBudget", "NodeOverlay")
RUN_FOR_KINDS = ("Job", "CronJob")


@dataclass(frozen=True)
class Event:
    index: int  # position in the file: equal times apply in this order
    at: float  # seconds from the start
    action: str  # apply | scale | delete | interrupt
    body: dict
    run_for: float | None = None

    @property
    def path(self) -> str:
        return f"events[{self.index}]"


@dataclass
class Trace:
    origin: str
    events: list


def _error(origin: str, path: str, message: str) -> InputError:
    return InputError(message, origin=origin, path=path)


def parse_duration(value: object, origin: str, path: str) -> float:
    """A Go duration (`90m`, `1h30m`, `0s`) in seconds; what the trace's `at` and `runFor` take."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise _error(origin, path, f"expected a Go duration such as 90m or 1h30m, got {value!r}")
    seconds = go_duration(value.strip())
    if seconds is None or not math.isfinite(seconds):
        raise _error(origin, path, f"invalid duration {value!r} (expected e.g. 30s, 90m, 1h30m)")
    return seconds


def _string(body: dict, key: str, origin: str, path: str, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise _error(origin, f"{path}.{key}", "missing" if value is None else f"expected a non-empty string, got {value!r}")
    return value


def _keys(body: dict, allowed: tuple, origin: str, path: str) -> None:
    for key in body:
        if key not in allowed:
            raise _error(origin, f"{path}.{key}", f"unknown key (expected {', '.join(allowed)})")


def _apply(body: object, origin: str, path: str) -> dict:
    if not isinstance(body, dict):
        raise _error(origin, path, f"expected a Kubernetes object, got {type(body).__name__}")
    kind = body.get("kind")
    if kind not in APPLY_KINDS:
        raise _error(origin, f"{path}.kind", f"expected one of {', '.join(APPLY_KINDS)}, got {kind!r}")
    api = body.get("apiVersion")
    if not isinstance(api, str) or not api.startswith(APPLY_KINDS[kind]):
        raise _error(origin, f"{path}.apiVersion", f"expected the apiVersion of a {kind} ({APPLY_KINDS[kind]}...), got {api!r}")
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        raise _error(origin, f"{path}.metadata", "missing" if meta is None else "expected a mapping")
    _string(meta, "name", origin, f"{path}.metadata")
    if meta.get("namespace") is not None:
        _string(meta, "namespace", origin, f"{path}.metadata")
    return body


def _scale(body: object, origin: str, path: str) -> dict:
    if not isinstance(body, dict):
        raise _error(origin, path, f"expected a mapping, got {type(body).__name__}")
    _keys(body, ("kind", "namespace", "name", "replicas"), origin, path)
    kind = _string(body, "kind", origin, path)
    if kind not in SCALABLE:
        raise _error(origin, f"{path}.kind", f"expected one of {', '.join(SCALABLE)}, got {kind!r}")
    _string(body, "name", origin, path)
    _string(body, "namespace", origin, path, required=False)
    replicas = body.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise _error(origin, f"{path}.replicas", f"expected an integer of 0 or more, got {replicas!r}")
    return {"kind": kind, "namespace": body.get("namespace") or "default", "name": body["name"], "replicas": replicas}


def _delete(body: object, origin: str, path: str) -> dict:
    if not isinstance(body, dict):
        raise _error(origin, path, f"expected a mapping, got {type(body).__name__}")
    _keys(body, ("kind", "namespace", "name"), origin, path)
    kind = _string(body, "kind", origin, path)
    if kind not in DELETABLE:
        raise _error(origin, f"{path}.kind", f"expected one of {', '.join(DELETABLE)}, got {kind!r}")
    _string(body, "name", origin, path)
    _string(body, "namespace", origin, path, required=False)
    return {"kind": kind, "namespace": body.get("namespace") or "default", "name": body["name"]}


def _interrupt(body: object, origin: str, path: str) -> dict:
    if not isinstance(body, dict):
        raise _error(origin, path, f"expected a mapping, got {type(body).__name__}")
    if "node" in body:
        _keys(body, ("node",), origin, path)
        return {"node": _string(body, "node", origin, path)}
    _keys(body, ("instanceType", "capacityType", "fraction"), origin, path)
    itype = _string(body, "instanceType", origin, path)
    ct = body.get("capacityType", "spot")
    if ct != "spot":
        raise _error(origin, f"{path}.capacityType", f"only spot capacity is interrupted, got {ct!r}")
    fraction = body.get("fraction", 1.0)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise _error(origin, f"{path}.fraction", f"expected a number in (0, 1], got {fraction!r}")
    return {"instanceType": itype, "capacityType": "spot", "fraction": float(fraction)}


_PARSERS = {"apply": _apply, "scale": _scale, "delete": _delete, "interrupt": _interrupt}


def parse_trace(data: Any, origin: str) -> Trace:
    """Validate a loaded trace document; InputError names `origin` and the key path."""
    if not isinstance(data, dict):
        raise _error(origin, "(top)", f'expected a mapping with "events", got {type(data).__name__}')
    _keys(data, ("events",), origin, "")
    raw = data.get("events")
    if not isinstance(raw, list):
        raise _error(origin, "events", "missing" if raw is None else f"expected a list, got {type(raw).__name__}")
    if len(raw) > MAX_EVENTS:
        raise _error(origin, "events", f"{len(raw):,} events; at most {MAX_EVENTS:,} are replayed (split the trace)")
    events, previous = [], 0.0
    for i, item in enumerate(raw):
        path = f"events[{i}]"
        if not isinstance(item, dict):
            raise _error(origin, path, f"expected a mapping, got {type(item).__name__}")
        _keys(item, ("at", "runFor") + ACTIONS, origin, path)
        if "at" not in item:
            raise _error(origin, f"{path}.at", "missing")
        at = parse_duration(item["at"], origin, f"{path}.at")
        if at < previous:
            raise _error(origin, f"{path}.at", f"{item['at']} is before the previous event ({previous:g}s): "
                                               "events must be in non-decreasing time order")
        previous = at
        actions = [a for a in ACTIONS if a in item]
        if len(actions) != 1:
            raise _error(origin, path, f"expected exactly one of {', '.join(ACTIONS)}, got {len(actions)}")
        action = actions[0]
        body = _PARSERS[action](item[action], origin, f"{path}.{action}")
        run_for = None
        if "runFor" in item:
            if action != "apply" or body["kind"] not in RUN_FOR_KINDS:
                raise _error(origin, f"{path}.runFor", "only an `apply` of a Job or CronJob takes runFor")
            run_for = parse_duration(item["runFor"], origin, f"{path}.runFor")
        events.append(Event(i, at, action, body, run_for))
    return Trace(origin, events)


def load_trace(path: str) -> Trace:
    """Read and validate a YAML or JSON trace file (bounded, see provisioner.safeyaml)."""
    try:
        if str(path).endswith(".json"):
            data = load_json_file(path, str(path), TRACE_LIMITS)
        else:
            data = load_yaml_file(path, str(path), TRACE_LIMITS)
    except UnsafeInput as exc:
        raise InputError(exc.message, origin=exc.origin, path=exc.path or None) from None
    return parse_trace(data, str(path))
