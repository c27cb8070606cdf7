"""Facts read straight from ../shared/reference/karpenter-versions/<version>/ (the upstream files),
parsed here independently of components/reference/ so tests compare the program with upstream,
not with itself. Tests using it are skipped where ../shared/ is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import yaml

from tests.harness import shared

VERSIONS = ("1.10.2", "1.11.3", "1.12.2", "1.13.1", "1.14.1")
PAIRS = list(zip(VERSIONS, VERSIONS[1:]))


def folder(version: str) -> Path:
    return shared(f"reference/karpenter-versions/{version}")


class _AnyTag(yaml.SafeLoader):
    """CloudFormation short forms as their plain argument (enough to read the policy JSON)."""


_AnyTag.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                              if isinstance(node, yaml.ScalarNode) else None)


def template(version: str) -> dict[str, Any]:
    return yaml.load((folder(version) / "cloudformation.yaml").read_text(), Loader=_AnyTag)  # noqa: S506


def controller_policies(version: str) -> dict[str, list[dict[str, Any]]]:
    """Statements (placeholders unfilled) by policy key (`NodeLifecycle`, ...), in upstream order."""
    return {logical.removesuffix("Policy"): json.loads(r["Properties"]["PolicyDocument"])["Statement"]
            for logical, r in template(version)["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"}


def actions(version: str) -> set[str]:
    found: set[str] = set()
    for statements in controller_policies(version).values():
        for s in statements:
            found.update([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    return found


def event_patterns(version: str) -> list[dict[str, Any]]:
    return [r["Properties"]["EventPattern"] for r in template(version)["Resources"].values() if r["Type"] == "AWS::Events::Rule"]


def chart_defaults(version: str) -> dict[str, Any]:
    return yaml.safe_load((folder(version) / "chart-values.yaml").read_text())


def leaves(values: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(values, dict) and values:
        for key, sub in values.items():
            yield from leaves(sub, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix


def crd_stems(version: str) -> set[str]:
    return {p.stem for p in (folder(version) / "crds").glob("*.yaml")}


def crd_schema(version: str, stem: str) -> dict[str, Any]:
    crd = yaml.safe_load((folder(version) / "crds" / f"{stem}.yaml").read_text())
    return next(v for v in crd["spec"]["versions"] if v["served"])["schema"]["openAPIV3Schema"]
