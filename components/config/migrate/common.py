"""What every migration step shares: the log of what it changed, could not carry or refused, and
the small facts of the v1 APIs the steps write (node class group, AMI aliases, annotations)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigIssue
from ..imports import Document

NODECLASS_GROUP, NODECLASS_KIND = "karpenter.k8s.aws", "EC2NodeClass"
NODEPOOL_V1, NODECLASS_V1 = "karpenter.sh/v1", "karpenter.k8s.aws/v1"
# Placeholder for the node role karpenter-convert writes (tools/karpenter-convert convert.go
# karpenterNodeRolePlaceholder); the importer replaces it with the stack's node role.
NODE_ROLE_PLACEHOLDER = "$KARPENTER_NODE_ROLE"
# Families with a Karpenter alias: aws ec2nodeclass_conversion.go ConvertFrom (v1.0) turns
# `amiFamily` without amiSelectorTerms into `<family lower-cased>@latest`.
ALIAS_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022")
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# v1-migration.md "Deprecated Annotations, Labels, and Tags Removed": both became do-not-disrupt.
REMOVED_ANNOTATIONS = ("karpenter.sh/do-not-evict", "karpenter.sh/do-not-consolidate")
GUIDE = "the v1 migration guide"
MAX_SECONDS = (2**63 - 1) // 10**9
V1BETA1_GUIDE = "the v1beta1 migration guide"


@dataclass
class Log:
    """Lines for the importer's report, each starting with the file and key path the user wrote."""

    changes: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    """Fields that could not be carried: why, and what to do by hand."""
    notes: list[str] = field(default_factory=list)
    errors: list[ConfigIssue] = field(default_factory=list)

    def changed(self, doc: Document, path: str, text: str) -> None:
        self.changes.append(f"{doc.file}: {doc.at(path)}: {text}")

    def lost(self, doc: Document, path: str, text: str) -> None:
        self.losses.append(f"{doc.file}: {doc.at(path)}: {text}")

    def note(self, doc: Document, path: str, text: str) -> None:
        self.notes.append(f"{doc.file}: {doc.at(path)}: {text}")

    def error(self, doc: Document, path: str, text: str) -> None:
        self.errors.append(ConfigIssue(doc.file, doc.at(path), text))


def seconds(value: Any, doc: Document, path: str, log: Log) -> str | None:
    """A v1alpha5 `ttlSeconds...` integer as a Karpenter duration (`2592000` -> `720h`), as
    nodepoolutil.New (karpenter v0.32 pkg/utils/nodepool/nodepool.go) parses `fmt.Sprintf("%ds")`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        log.error(doc, path, f"expected a non-negative whole number of seconds, got {value!r}")
        return None
    if value > MAX_SECONDS:
        # time.ParseDuration fails above int64 nanoseconds (nodepool.go wraps it in lo.Must: a panic).
        log.error(doc, path, f"{value} seconds is above the longest duration Karpenter reads ({MAX_SECONDS} seconds, "
                             "Go's time.Duration limit of about 292 years)")
        return None
    hours, rest = divmod(value, 3600)
    minutes, secs = divmod(rest, 60)
    text = "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)
    return text or "0s"


def mapping(value: Any, doc: Document, path: str, log: Log) -> dict[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        log.error(doc, path, f"expected a mapping, got {type(value).__name__}")
        return None
    return value


def unknown_keys(spec: dict[str, Any], known: tuple[str, ...], doc: Document, path: str, schema: str, log: Log) -> None:
    for key in spec:
        if key not in known:
            log.error(doc, f"{path}.{key}", f"unknown field {key!r} (not in the {schema} schema)")


def rename_annotations(annotations: dict[str, Any], doc: Document, path: str, log: Log) -> dict[str, Any]:
    """`do-not-evict` and `do-not-consolidate` -> `do-not-disrupt` (removed in v1.0, v1-migration.md)."""
    renamed = {}
    for key, value in annotations.items():
        if key in REMOVED_ANNOTATIONS:
            log.changed(doc, f"{path}.{key}", f"Karpenter v1 removed this annotation; written as {DO_NOT_DISRUPT}: "
                                              f"\"true\" ({GUIDE}, \"Deprecated Annotations\")")
            renamed[DO_NOT_DISRUPT] = "true"
        else:
            renamed[key] = copy.deepcopy(value)
    return renamed


def object_metadata(body: dict[str, Any]) -> dict[str, Any]:
    """What karpenter-convert keeps of an object's metadata: name, labels, annotations."""
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return {k: copy.deepcopy(metadata[k]) for k in ("name", "labels", "annotations") if metadata.get(k)}


# v1 key path -> the original's, per kind of conversion (most specific first; a path outside these
# is named in the converted object, "document 1 (converted to v1): spec...").
_SAME = (("metadata", "metadata"),)
RENAMED = {
    "Provisioner": (("spec.template.metadata.labels", "spec.labels"),
                    ("spec.template.metadata.annotations", "spec.annotations"),
                    ("spec.template.spec.requirements", "spec.requirements"),
                    ("spec.template.spec.taints", "spec.taints"),
                    ("spec.template.spec.startupTaints", "spec.startupTaints"),
                    ("spec.template.spec.expireAfter", "spec.ttlSecondsUntilExpired"),
                    ("spec.disruption.consolidateAfter", "spec.ttlSecondsAfterEmpty"),
                    ("spec.limits", "spec.limits.resources"), ("spec.weight", "spec.weight"), *_SAME),
    "provider": (("spec.subnetSelectorTerms", "spec.provider.subnetSelector"),
                 ("spec.securityGroupSelectorTerms", "spec.provider.securityGroupSelector"),
                 ("spec.amiSelectorTerms", "spec.provider.amiFamily"), ("spec", "spec.provider"), *_SAME),
    "AWSNodeTemplate": (("spec.subnetSelectorTerms", "spec.subnetSelector"),
                        ("spec.securityGroupSelectorTerms", "spec.securityGroupSelector"),
                        ("spec.amiSelectorTerms", "spec.amiSelector"), ("spec", "spec"), *_SAME),
    "NodePool": (("spec.template.spec.expireAfter", "spec.disruption.expireAfter"),
                 ("spec.template.spec.nodeClassRef.group", "spec.template.spec.nodeClassRef.apiVersion"),
                 ("spec", "spec"), *_SAME),
    "EC2NodeClass": (("spec.amiSelectorTerms", "spec.amiSelectorTerms"), ("spec", "spec"), *_SAME),
}


def converted(doc: Document, body: dict[str, Any], what: str = "", renamed: tuple[tuple[str, str], ...] = ()) -> Document:
    """The v1 object made from `doc`; key paths in `renamed` are named as the original has them."""
    return Document(doc.file, f"{doc.where}{what} (converted to v1)", body, renamed, doc.where)
