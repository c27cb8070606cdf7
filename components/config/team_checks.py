"""Checks of a team file that need more than its models: environment keys that name no stack,
and zone requirements outside the cluster's zones (both with the key path the user wrote)."""

from __future__ import annotations

import difflib
from typing import Any

from .errors import ConfigIssue, format_path
from .teams import Team


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def unknown_environments(doc: Any, environments: list[str], display: str) -> list[ConfigIssue]:
    """`environments.production`, `budget.prd`: keys that name no stack are never applied."""
    issues = []
    for section in ("environments", "budget"):
        mapping = doc.get(section) if isinstance(doc, dict) else None
        for key in mapping if isinstance(mapping, dict) else ():
            if key not in environments:
                close = difflib.get_close_matches(str(key), environments, n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                issues.append(ConfigIssue(display, f"{section}.{key}", f"no stack or environment is named {_short(key)}; "
                                          f"{hint}stacks: {', '.join(environments)}"))
    return issues


ZONE_KEY = "topology.kubernetes.io/zone"


def zone_issues(team: Team, zones: list[str], file_index: list[int], sources: list[list[tuple | None]],
                display: str) -> list[ConfigIssue]:
    """A pool whose zone requirements admit none of the cluster's zones: Karpenter finds no subnet
    for it and never launches a node (as nodepool-has-instance-types flags an empty type set)."""
    issues = []
    for index, pool in enumerate(team.node_pools):
        admitted, culprit = set(zones), None
        for r_index, requirement in enumerate(pool.requirements):
            if requirement.key != ZONE_KEY:
                continue
            before = set(admitted)
            if requirement.operator == "In":
                admitted &= set(requirement.values)
            elif requirement.operator == "NotIn":
                admitted -= set(requirement.values)
            elif requirement.operator == "DoesNotExist":
                admitted = set()
            if before and not admitted:
                culprit = (r_index, requirement)
        if culprit is not None:
            r_index, requirement = culprit
            source = sources[index][r_index] if r_index < len(sources[index]) else None
            path = format_path(source or ("nodePools", file_index[index], "preset"))
            issues.append(ConfigIssue(display, path, f"{ZONE_KEY} {requirement.operator} {requirement.values} admits none "
                                      f"of the cluster's zones ({', '.join(zones)}; cluster.zones): Karpenter finds no "
                                      "subnet there and never launches a node for this pool"))
    return issues
