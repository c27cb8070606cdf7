"""The importer's check: render the imported config as the stack will and compare it, field by
field, with the original NodePool and EC2NodeClass specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from .config.errors import format_path
from .config.imports import MANAGED_NODECLASS_KEYS, NODECLASS_API, NODEPOOL_API, Document, ImportResult
from .config.nodeclasses import NodeClass
from .config.teams import Team


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every scalar of a nested value with its path (list items by index)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from leaves(child, (*path, index))
    else:
        yield path, value


def _lookup(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return _MISSING
    return value


_MISSING = object()


def _same(original: Any, rendered: Any) -> bool:
    if original is None:
        return True  # null is no value (the API server drops it)
    if original == rendered and type(original) is type(rendered):
        return True
    if isinstance(original, (int, float)) and not isinstance(original, bool) and isinstance(rendered, str):
        return str(original) == rendered  # a quantity written as a YAML number
    return original == "" and rendered is _MISSING  # an empty taint value is no value


def spec_differences(original: dict[str, Any], rendered: dict[str, Any], *, managed: Iterable[str] = ()) -> list[str]:
    """Leaves of `original` (a spec) that `rendered` does not reproduce, keys in `managed` aside."""
    managed = set(managed)
    found = []
    for path, value in leaves(original):
        if path and path[0] in managed:
            continue
        got = _lookup(rendered, path)
        if not _same(value, got):
            shown = "absent" if got is _MISSING else repr(got)
            found.append(f"{format_path(path, 'spec')}: {value!r} renders as {shown}")
    return found


def spec_additions(original: dict[str, Any], rendered: dict[str, Any], *, managed: Iterable[str] = ()) -> list[str]:
    """Leaves `rendered` has where `original` has none (the platform's additions, explicit defaults)."""
    managed = set(managed)
    return [f"{format_path(path, 'spec')}={value!r}" for path, value in leaves(rendered)
            if not (path and path[0] in managed) and _lookup(original, path) is _MISSING]


@dataclass
class Roundtrip:
    losses: list[str] = field(default_factory=list)
    """Fields of an original spec the render does not reproduce (empty when the import is faithful)."""
    additions: list[str] = field(default_factory=list)
    """Per object, what the render writes that the original did not (defaults made explicit, the
    platform's labels and tags)."""


def roundtrip(docs: Iterable[Document], result: ImportResult, team_name: str) -> Roundtrip:
    """Render the imported config the way the stack will (the stack's own role and selectors aside)
    and compare it with every original spec."""
    # The builders import the Pulumi SDK: loaded only once an import passed its checks (a
    # refusal stays fast). Not a cycle: components.config never imports this module.
    from .nodeclasses import nodeclass_manifest
    from .nodepools import nodepool_manifest

    found = Roundtrip()
    if result.team is None:
        return found
    team = Team.model_validate(result.team)
    by_name = {f"{team.name}-{pool.name}": pool for pool in team.node_pools}
    for document in docs:
        body = document.body if isinstance(document.body, dict) else {}
        name: Any = (body.get("metadata") or {}).get("name") if isinstance(body.get("metadata"), dict) else None
        managed: tuple[str, ...] = ()
        if body.get("kind") == "NodePool" and body.get("apiVersion") == NODEPOOL_API:
            pool = by_name.get(name if str(name).startswith(f"{team_name}-") else f"{team_name}-{name}")
            rendered = nodepool_manifest(team, pool)["spec"] if pool else {}
        elif body.get("kind") == "EC2NodeClass" and body.get("apiVersion") == NODECLASS_API and name in result.node_classes:
            node_class = NodeClass.model_validate(result.node_classes[name])
            rendered = nodeclass_manifest(name, node_class, cluster_name="cluster", role="node-role")["spec"]
            managed = MANAGED_NODECLASS_KEYS
        else:
            continue
        original = body.get("spec") or {}
        found.losses += [f"{document.file}: {document.at(d)}" for d in spec_differences(original, rendered, managed=managed)]
        added = spec_additions(original, rendered, managed=managed)
        if added:
            found.additions.append(f"{document.file}: {document.where}: the render adds {', '.join(added)}")
    return found
