"""Karpenter objects judged before anything is planned: every NodePool, NodeClaim, EC2NodeClass
and NodeOverlay (and any other object of Karpenter's API groups, such as a v1beta1 NodePool) goes
through the one validator (kubefacts.validation: CRD schema, CEL, Karpenter's runtime checks), so
`simulate`, `tune`, `drift`, `consolidate` and the advisor refuse what the API server or
Karpenter would refuse, in the same words as the config, the importer and the policy pack.
Pure: objects in, objects out."""
from __future__ import annotations

from typing import Any, Sequence

from kubefacts.validation import InvalidObject, is_karpenter_object, validate

from .errors import InvalidObjects


def _origin(origins: Sequence[str] | None, index: int) -> str | None:
    return origins[index] if origins is not None and index < len(origins) else None


def screen(objects: Sequence[Any], origins: Sequence[str] | None = None, *, skip_invalid: bool = False,
           release: str | None = None) -> tuple[list, list | None, list[InvalidObject]]:
    """(objects, origins, skipped): the input without its invalid Karpenter objects (a `kind:
    List`'s items judged one by one), and the verdicts on those left out. Without
    `skip_invalid`, any invalid object raises InvalidObjects (all of them, in input order)."""
    kept: list = []
    kept_origins: list | None = None if origins is None else []
    found: list[InvalidObject] = []
    skipped: list[InvalidObject] = []
    for index, obj in enumerate(objects):
        origin = _origin(origins, index)
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            items = []
            for item_index, item in enumerate(obj["items"]):
                where = f"{origin}, items[{item_index}]" if origin else f"items[{item_index}]"
                errors = validate(item, release=release, origin=where) if is_karpenter_object(item) else []
                found += errors
                if errors:
                    skipped.append(errors[0])
                else:
                    items.append(item)
            obj = {**obj, "items": items}
        elif is_karpenter_object(obj):
            errors = validate(obj, release=release, origin=origin)
            if errors:
                found += errors
                skipped.append(errors[0])
                continue
        kept.append(obj)
        if kept_origins is not None:
            kept_origins.append(origin)
    if found and not skip_invalid:
        raise InvalidObjects(found)
    return kept, kept_origins, skipped


def skipped_lines(skipped: Sequence[InvalidObject]) -> list[str]:
    """One line per object `--skip-invalid` left out, with the first reason it is refused."""
    return [f"skipped invalid object (--skip-invalid): {error.render()}" for error in skipped]


__all__ = ["screen", "skipped_lines"]
