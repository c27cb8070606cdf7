"""The served CRD schemas (openAPIV3Schema with its CEL rules) of every supported Karpenter
release, as `make reference` writes them (components/reference/generate.py, `--crds-out`):
`crds/<version>.json`, by file stem (`karpenter.sh_nodepools`): group, kind, plural, scope and
the served versions with their schema (descriptions dropped). Data only: nothing here judges.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "crds"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.lru_cache(maxsize=1)
def releases() -> tuple[str, ...]:
    """Every release with CRD data, oldest first."""
    return tuple(sorted((p.stem for p in DATA_DIR.glob("*.json")), key=_key))


@functools.cache
def release_crds(version: str) -> dict[str, dict[str, Any]]:
    """The CRDs of one release (cached; treat as read-only). ValueError for an unknown release."""
    if version not in releases():
        raise ValueError(f"Karpenter {version!r} is not supported; supported versions: {', '.join(releases())}")
    crds: dict[str, dict[str, Any]] = json.loads((DATA_DIR / f"{version}.json").read_text())
    return crds


__all__ = ["DATA_DIR", "release_crds", "releases"]
