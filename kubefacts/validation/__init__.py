"""One validator of Karpenter objects (NodePool, NodeClaim, EC2NodeClass, NodeOverlay) per
supported release: the API server's judgment (the served CRD version's openAPIV3Schema and its
CEL rules, Go regex semantics: kubefacts.validation.schema) and then Karpenter's runtime checks
(kubefacts.validation.runtime). Every tool judges through `validate`, so one object gets one
verdict, in the same words, in the config, the importer, the provisioner's commands and advisor,
the policy pack and the pr-report.

    validate(obj, *, release=None, origin=None) -> list[InvalidObject]

An old API version (karpenter.sh/v1beta1 or v1alpha5, karpenter.k8s.aws/v1beta1 or v1alpha1) is
one error at `apiVersion` naming the importer's conversion as the way out. `status` is not
judged (controllers write it). Objects of other groups are not judged here (an empty list). jsonschema and cel-python load on the first call.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from ..amis import missing_selector_hint
from ..errors import LocatedError
from ..labels import DEFAULT_RELEASE, SUPPORTED_RELEASES

GROUPS = ("karpenter.sh", "karpenter.k8s.aws")
KINDS = {("karpenter.sh", "NodePool"), ("karpenter.sh", "NodeClaim"), ("karpenter.k8s.aws", "EC2NodeClass"),
         ("karpenter.sh", "NodeOverlay")}
# The pre-v1 kinds the importer converts (Provisioner and AWSNodeTemplate are v1alpha5/v1alpha1).
CONVERTIBLE = {"NodePool", "EC2NodeClass", "Provisioner", "AWSNodeTemplate"}
IMPORTER = "python -m offline.importer --dry-run"
# jsonschema's additionalProperties message: one error per unexpected field.
_UNEXPECTED = re.compile(r"^Additional properties are not allowed \((.*) (?:was|were) unexpected\)$")
_REQUIRED = re.compile(r"^'(.+)' is a required property$")


class InvalidObject(LocatedError, ValueError):
    """An object the API server or Karpenter refuses: where it was read (`origin`), which object
    (`Kind "name"`), the key path and the reason. `words` is what every tool prints."""

    def __init__(self, key_path: str, message: str, *, origin: str | None = None, obj: str | None = None):
        super().__init__(origin, None, None, key_path, message, obj)
        self.origin = origin

    @property
    def words(self) -> str:
        """`Kind "name": key.path: message`: the same in every tool, whatever it prefixes."""
        return ": ".join(p for p in (self.obj, self.key_path, self.message) if p)


def is_karpenter_object(obj: Any) -> bool:
    """A mapping whose apiVersion's group is Karpenter's (any version, any kind)."""
    return isinstance(obj, Mapping) and str(obj.get("apiVersion") or "").rpartition("/")[0] in GROUPS


def object_name(obj: Mapping[str, Any]) -> str:
    """`Kind "name"`, as the provisioner's messages name objects."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f'{obj.get("kind") or "object"} "{name or "(unnamed)"}"'


def release_or_default(release: str | None) -> str:
    return release if release in SUPPORTED_RELEASES else DEFAULT_RELEASE


def validate(obj: Mapping[str, Any], *, release: str | None = None, origin: str | None = None) -> list[InvalidObject]:
    """Every reason the API server (schema, CEL) or Karpenter (runtime checks) refuses `obj`
    under `release` (the newest supported when None); empty for a valid object and for objects
    outside Karpenter's groups."""
    if not is_karpenter_object(obj):
        return []
    release = release_or_default(release)
    try:
        key = json.dumps(obj, sort_keys=True)
    except (TypeError, ValueError):  # not JSON-shaped (e.g. a YAML date): judged uncached
        return _errors(_judge(dict(obj), release), obj, origin)
    return _errors(_cached(key, release), obj, origin)


def _errors(problems: tuple[tuple[str, str], ...], obj: Mapping[str, Any], origin: str | None) -> list[InvalidObject]:
    label = object_name(obj)
    return [InvalidObject(path, message, origin=origin, obj=label) for path, message in problems]


@functools.lru_cache(maxsize=4096)
def _cached(key: str, release: str) -> tuple[tuple[str, str], ...]:
    # By content: a cluster dump repeats the same NodeClaim specs, the render the same objects.
    return _judge(json.loads(key), release)


def _judge(obj: dict[str, Any], release: str) -> tuple[tuple[str, str], ...]:
    from . import runtime
    from .schema import validator_for

    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    group, _, version = api_version.rpartition("/")
    crd = validator_for(release)
    if crd.served_schema(api_version, kind) is None:
        return (("apiVersion", _not_served(group, version, kind, release, crd)),)
    problems: list[tuple[str, str]] = []
    # `status` is the controllers' output (the status subresource), not what a user wrote: a
    # dump's or a test's partial status says nothing about whether the object is admitted.
    for violation in crd.validate({k: v for k, v in obj.items() if k != "status"}):
        match = _UNEXPECTED.match(violation.message)
        if match:
            where = f"{violation.path}." if violation.path else ""
            problems += [(f"{where}{name}", f"unknown field (not in the {api_version} {kind} schema)")
                         for name in re.findall(r"'([^']+)'", match.group(1))]
        elif (required := _REQUIRED.match(violation.message)) is not None:
            where = f"{violation.path}." if violation.path else ""
            problems.append((f"{where}{required.group(1)}", f"Required value (the {api_version} {kind} schema)"))
        else:
            problems.append((violation.path, violation.message))
    spec = obj.get("spec")
    if kind == "EC2NodeClass" and isinstance(spec, Mapping) and spec.get("amiFamily"):
        # v1 requires amiSelectorTerms; say which alias a v1beta1-era `amiFamily` alone meant.
        problems = [(path, message + missing_selector_hint(spec["amiFamily"]))
                    if path == "spec.amiSelectorTerms" and message.startswith("Required value") else (path, message)
                    for path, message in problems]
    if not problems and kind in runtime.CHECKS:
        problems += runtime.CHECKS[kind](obj, release)
    return tuple(problems)


def _not_served(group: str, version: str, kind: str, release: str, crd: Any) -> str:
    served = sorted(f"{g}/{v['name']}" for (g, k), c in crd.crds.items() if k == kind
                    for v in c["spec"]["versions"] if v.get("served"))
    if not served:
        what = f"{kind or 'an object without kind'} is not a kind Karpenter {release} serves in {group}"
    else:
        what = f"{group}/{version} {kind} is not served by Karpenter {release} (it serves {', '.join(served)})"
    if kind in CONVERTIBLE:
        return f"{what}; convert it to v1 with the importer: {IMPORTER} ..."
    return what


__all__ = ["GROUPS", "IMPORTER", "KINDS", "InvalidObject", "is_karpenter_object", "object_name", "validate"]
