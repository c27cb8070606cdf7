"""The advisor's view of the cluster: watched objects by kind and uid, as plain dicts.

Only structure is checked here (an object we cannot key is useless); whether an object makes
sense to the scheduling core is checked by the controller with the core's own loader.
"""
from __future__ import annotations

from typing import Any

from .kinds import Kind


class Malformed(ValueError):
    """An object the advisor cannot use; it is skipped, counted and logged, never fatal."""


def _text(meta: dict, key: str) -> str | None:
    value = meta.get(key)
    return value if isinstance(value, str) and value else None


def normalize(kind: Kind, obj: Any) -> dict:
    """`obj` ready for the cache, or Malformed.

    List responses leave `kind`/`apiVersion` off their items, so both are set here (the core
    dispatches on them); `managedFields` is dropped because it is most of a pod's size and the
    cache holds every pod in the cluster.
    """
    if not isinstance(obj, dict):
        raise Malformed(f"{kind.kind}: expected an object, got {type(obj).__name__}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise Malformed(f"{kind.kind}: metadata is missing or not an object")
    name, uid = _text(meta, "name"), _text(meta, "uid")
    if name is None or uid is None:
        raise Malformed(f"{kind.kind} {name or '?'}: metadata.name and metadata.uid must be non-empty strings")
    if obj.get("kind") not in (None, kind.kind):
        raise Malformed(f"{kind.kind} {name}: kind is {obj.get('kind')!r}")
    if kind.namespaced and _text(meta, "namespace") is None:
        raise Malformed(f"{kind.kind} {name}: metadata.namespace must be a non-empty string")
    for section in ("spec", "status"):
        if section in obj and obj[section] is not None and not isinstance(obj[section], dict):
            raise Malformed(f"{kind.kind} {name}: {section} is not an object")
    out = dict(obj)
    out["kind"], out["apiVersion"] = kind.kind, kind.api_version
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def uid_of(obj: dict) -> str:
    return obj["metadata"]["uid"]


def resource_version(obj: dict) -> str | None:
    return obj["metadata"].get("resourceVersion")


class ObjectCache:
    """Objects by kind name and uid. Not thread-safe: only the controller loop touches it."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, dict]] = {}

    def replace(self, kind: str, objects: list[dict]) -> None:
        """The result of a full list: everything not in it is gone (deletes missed while the
        watch was down are noticed here)."""
        self._objects[kind] = {uid_of(o): o for o in objects}

    def apply(self, kind: str, event_type: str, obj: dict) -> bool:
        """A watch event; True when the cache changed (a replayed event with the same
        resourceVersion, e.g. after a reconnect, changes nothing)."""
        bucket = self._objects.setdefault(kind, {})
        uid = uid_of(obj)
        if event_type == "DELETED":
            return bucket.pop(uid, None) is not None
        old = bucket.get(uid)
        if old is not None and resource_version(old) is not None and resource_version(old) == resource_version(obj):
            return False
        bucket[uid] = obj
        return True

    def items(self, kind: str) -> list[dict]:
        return list(self._objects.get(kind, {}).values())

    def get(self, kind: str, uid: str) -> dict | None:
        return self._objects.get(kind, {}).get(uid)

    def count(self, kind: str) -> int:
        return len(self._objects.get(kind, {}))
