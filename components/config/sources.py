"""Where each pool and requirement of a team file was written, carried through the environment
override and the presets that merge them, so errors name the user's own key path."""

from __future__ import annotations

from typing import Any


def _get(node: Any, key: Any) -> Any:
    return node.get(key) if isinstance(node, dict) and isinstance(key, str) else None


# Marks where each pool and requirement was written, carried through overrides and presets (a
# tuple key: YAML keys are strings, so the user's file cannot hold one).
_SOURCE = ("source",)


def mark_sources(doc: dict, env: str) -> None:
    """Tag each pool with its index in the file, and each requirement with its path there (the
    pool's own list or `environments.<env>`'s override), before anything merges them."""
    pools = doc.get("nodePools")
    for index, pool in enumerate(pools if isinstance(pools, list) else ()):
        if isinstance(pool, dict):
            pool[_SOURCE] = index
            for r_index, requirement in enumerate(pool.get("requirements") or ()):
                requirement[_SOURCE] = ("nodePools", index, "requirements", r_index)
    patches = _get(_get(_get(doc, "environments"), env), "nodePools")
    for pool_name, patch in patches.items() if isinstance(patches, dict) else ():
        for r_index, requirement in enumerate(_get(patch, "requirements") or ()):
            requirement[_SOURCE] = ("environments", env, "nodePools", pool_name, "requirements", r_index)


def take_sources(doc: dict) -> tuple[list[int], list[list[tuple | None]]]:
    """Remove the marks: per resolved pool, its index in the file and each requirement's source
    (None: it came from a preset)."""
    file_index, sources = [], []
    pools = doc.get("nodePools")
    for index, pool in enumerate(pools if isinstance(pools, list) else ()):
        pool = pool if isinstance(pool, dict) else {}
        file_index.append(pool.pop(_SOURCE, index))
        requirements = pool.get("requirements")
        requirements = requirements if isinstance(requirements, list) else []
        sources.append([r.pop(_SOURCE, None) if isinstance(r, dict) else None for r in requirements])
    environments = doc.get("environments")
    for override in environments.values() if isinstance(environments, dict) else ():
        patches = _get(override, "nodePools")
        for patch in patches.values() if isinstance(patches, dict) else ():
            for requirement in _get(patch, "requirements") or ():
                if isinstance(requirement, dict):
                    requirement.pop(_SOURCE, None)
    return file_index, sources
