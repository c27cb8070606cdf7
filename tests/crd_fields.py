"""The leaf fields and enum values of the served `spec` of NodePool, EC2NodeClass and NodeOverlay,
read from the pinned CRDs (../shared/reference/karpenter/crds/) every time, never copied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from tests.harness import shared

# kind -> (CRD file, served version the platform renders)
KINDS = {
    "NodePool": ("karpenter.sh_nodepools.yaml", "v1"),
    "EC2NodeClass": ("karpenter.k8s.aws_ec2nodeclasses.yaml", "v1"),
    "NodeOverlay": ("karpenter.sh_nodeoverlays.yaml", "v1alpha1"),
}


@dataclass(frozen=True)
class Leaf:
    kind: str
    path: tuple[str, ...]  # keys from spec; "[]" for a list item
    type: str  # string, integer, boolean, map (object with additionalProperties), ...
    enum: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind} spec.{'.'.join(self.path)}".replace(".[]", "[]")


def spec_schema(kind: str) -> dict[str, Any]:
    file, version = KINDS[kind]
    crd = yaml.safe_load(shared(f"reference/karpenter/crds/{file}").read_text())
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served"))
    return served["schema"]["openAPIV3Schema"]["properties"]["spec"]


def leaves(kind: str) -> list[Leaf]:
    def walk(schema: dict[str, Any], path: tuple[str, ...]) -> Iterator[Leaf]:
        kind_of = schema.get("type")
        if kind_of == "object" and "properties" in schema:
            for key, child in schema["properties"].items():
                yield from walk(child, (*path, key))
        elif kind_of == "array" and isinstance(schema.get("items"), dict):
            yield from walk(schema["items"], (*path, "[]"))
        else:
            shown = "map" if kind_of == "object" else str(kind_of or schema.get("x-kubernetes-int-or-string") and "int-or-string")
            yield Leaf(kind, path, shown, tuple(str(v) for v in schema.get("enum", ())))

    return list(walk(spec_schema(kind), ()))


def all_leaves() -> list[Leaf]:
    return [leaf for kind in KINDS for leaf in leaves(kind)]
