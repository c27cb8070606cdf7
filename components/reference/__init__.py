"""The Karpenter releases this program supports, as its own generated data (`data/<version>.json`,
written by `make reference` from upstream files; see generate.py). Everything version-dependent
(IAM, interruption rules, chart defaults, CRD schemas and enums) is read from here, so a clone
without `../shared/` renders, validates and plans.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubefacts.validation.crds import release_crds

DATA_DIR = Path(__file__).resolve().parent / "data"


class UnsupportedVersion(ValueError):
    """A Karpenter version without data here."""

    def __init__(self, version: str):
        self.version = version
        super().__init__(f"Karpenter {version!r} is not supported; supported versions: {', '.join(supported())}")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.lru_cache(maxsize=1)
def supported() -> tuple[str, ...]:
    """Every version with data, oldest first."""
    return tuple(sorted(json.loads((DATA_DIR / "index.json").read_text())["versions"], key=_key))


def newest() -> str:
    return supported()[-1]


def check(version: str) -> str:
    if version not in supported():
        raise UnsupportedVersion(version)
    return version


def order(version: str) -> tuple[int, ...]:
    """A sort key: releases compare as numbers (1.9 < 1.10)."""
    return _key(version)


@dataclass(frozen=True)
class Release:
    """One release's data; see generate.py for the layout."""

    version: str
    data: dict[str, Any]

    @property
    def controller_policies(self) -> list[dict[str, Any]]:
        """`{"key", "name", "version", "statements"}` in upstream order; placeholders unfilled."""
        return self.data["iam"]["controllerPolicies"]

    @property
    def node_role(self) -> dict[str, Any]:
        return self.data["iam"]["nodeRole"]

    @property
    def interruption(self) -> dict[str, Any]:
        return self.data["interruption"]

    def chart_defaults(self, chart: str) -> dict[str, Any]:
        """Default values of chart `karpenter` or `karpenter-crd`."""
        return self.data["charts"][chart]["defaults"]

    @property
    def crds(self) -> dict[str, dict[str, Any]]:
        """By file stem (`karpenter.sh_nodepools`): group, kind, plural, scope, served versions with
        schema; kept once, with the validator that judges by them (kubefacts.validation.crds)."""
        return release_crds(self.version)

    @property
    def enums(self) -> dict[str, list[Any]]:
        """`<crd>:<dotted path>` -> enum values, every served version."""
        return self.data["enums"]

    @property
    def provenance(self) -> dict[str, Any]:
        return self.data["provenance"]


@functools.lru_cache(maxsize=None)
def release(version: str) -> Release:
    """A supported release's data (cached; treat it as read-only)."""
    check(version)
    return Release(version, json.loads((DATA_DIR / f"{version}.json").read_text()))
