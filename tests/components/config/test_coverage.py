"""Every leaf field and enum value of the served NodePool (karpenter.sh/v1), EC2NodeClass
(karpenter.k8s.aws/v1) and NodeOverlay (karpenter.sh/v1alpha1) specs, read from the pinned CRDs,
can be written in the stack file or a team file. When the pin moves and the CRDs gain a field or
an enum value, these tests fail until the config models offer it (or it is listed in FIXED with
the reason)."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from components.config.stack import StackSettings
from components.config.teams import Team
from components.nodepools import nodepool_manifest
from tests.crd_fields import Leaf, all_leaves
from tests.harness import MINIMAL_POOL, platform_from

# Leaves the platform writes itself, with why; every other leaf must be reachable from config.
FIXED = {
    "NodePool spec.template.spec.nodeClassRef.group": "always karpenter.k8s.aws: node classes are the stack's EC2NodeClasses",
    "NodePool spec.template.spec.nodeClassRef.kind": "always EC2NodeClass (the only node class kind on AWS)",
}
# Where each kind's spec lives in config, and how CRD paths under it map to config paths.
_PATH_MAP = {
    "NodePool": [
        (("template", "spec", "nodeClassRef", "name"), ("nodePools", "[]", "nodeClass")),
        (("template", "metadata"), ("nodePools", "[]")),
        (("template", "spec"), ("nodePools", "[]")),
        ((), ("nodePools", "[]")),
    ],
    "EC2NodeClass": [((), ("nodeClasses", "{}"))],
    "NodeOverlay": [((), ("nodeOverlays", "[]"))],
}
_ROOT = {"NodePool": Team, "EC2NodeClass": StackSettings, "NodeOverlay": Team}


def config_path(leaf: Leaf) -> tuple[str, ...]:
    for crd_prefix, config_prefix in _PATH_MAP[leaf.kind]:
        if leaf.path[:len(crd_prefix)] == crd_prefix:
            return (*config_prefix, *leaf.path[len(crd_prefix):])
    raise AssertionError(f"no mapping for {leaf}")


def _options(annotation: Any) -> list[Any]:
    """The alternatives of an annotation (Optional, Annotated and unions unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [o for arg in typing.get_args(annotation) for o in _options(arg) if o is not type(None)]
    return [annotation]


def resolve(root: type[BaseModel], path: tuple[str, ...]) -> Any:
    """The annotation of the config key at `path` ("[]" a list item, "{}" a map value), or raise."""
    current: Any = root
    for part in path:
        found = None
        for option in _options(current):
            origin = typing.get_origin(option)
            if part == "[]" and origin is list:
                found = typing.get_args(option)[0]
            elif part == "{}" and origin is dict:
                found = typing.get_args(option)[1]
            elif isinstance(option, type) and issubclass(option, BaseModel):
                for name, field in option.model_fields.items():
                    if part in (field.alias, name) and (field.alias or name) == part:
                        found = field.annotation
            if found is not None:
                break
        if found is None:
            raise KeyError(f"{'.'.join(path)}: no config key {part!r}")
        current = found
    return current


def _accepted_values(annotation: Any) -> set[str]:
    values: set[str] = set()
    for option in _options(annotation):
        if typing.get_origin(option) is typing.Literal:
            values |= {str(v) for v in typing.get_args(option)}
    return values


def test_the_derived_list_holds_the_fields_issue_11_found_missing():
    """The derivation itself: the served specs' leaves include what issue 11 measured as missing
    (96 leaves and 55 enum values at v1.14.1)."""
    found = {str(leaf): leaf for leaf in all_leaves()}
    for name in ("NodePool spec.replicas", "NodePool spec.limits", "EC2NodeClass spec.userData",
                 "EC2NodeClass spec.kubelet.podsPerCore", "EC2NodeClass spec.networkInterfaces[].interfaceType",
                 "EC2NodeClass spec.capacityReservationSelectorTerms[].instanceMatchCriteria",
                 "EC2NodeClass spec.placementGroupSelector.id", "NodeOverlay spec.priceAdjustment"):
        assert name in found
    assert "Balanced" in found["NodePool spec.disruption.consolidationPolicy"].enum
    assert {"Gte", "Lte"} <= set(found["NodePool spec.template.spec.requirements[].operator"].enum)
    assert found["NodePool spec.limits"].type == "map"


def test_every_crd_field_is_reachable_from_config():
    unreachable = []
    for leaf in all_leaves():
        if str(leaf) in FIXED:
            continue
        try:
            annotation = resolve(_ROOT[leaf.kind], config_path(leaf))
        except KeyError as err:
            unreachable.append(f"{leaf}: {err}")
            continue
        if leaf.type == "map" and not any(typing.get_origin(o) is dict for o in _options(annotation)):
            unreachable.append(f"{leaf}: config key is not a map")
    assert unreachable == []


def test_every_crd_enum_value_is_accepted_by_config():
    missing = []
    for leaf in all_leaves():
        if not leaf.enum:
            continue
        annotation = resolve(_ROOT[leaf.kind], config_path(leaf))
        missing += [f"{leaf}: {value}" for value in leaf.enum if value not in _accepted_values(annotation)]
    assert missing == []


def test_fixed_fields_are_rendered_with_their_only_value():
    platform = platform_from(teams={"web": {"name": "web", "nodePools": [MINIMAL_POOL]}})
    ref = nodepool_manifest(platform.teams[0], platform.teams[0].node_pools[0])["spec"]["template"]["spec"]["nodeClassRef"]
    assert (ref["group"], ref["kind"]) == ("karpenter.k8s.aws", "EC2NodeClass")
    assert set(FIXED) <= {str(leaf) for leaf in all_leaves()}, "FIXED names a field the CRDs no longer have"


@pytest.mark.parametrize("path", [("nodePools", "[]", "nodeClas"), ("nodeClasses", "{}", "kubelet", "maxPod")])
def test_resolve_fails_for_a_key_config_does_not_have(path):
    root = Team if path[0] == "nodePools" else StackSettings
    with pytest.raises(KeyError):
        resolve(root, path)
