"""Older Karpenter objects to v1, before the import: `karpenter.sh/v1alpha5` Provisioners (with their
`karpenter.k8s.aws/v1alpha1` AWSNodeTemplates or inline `spec.provider`) and `karpenter.sh/v1beta1`
NodePools with `karpenter.k8s.aws/v1beta1` EC2NodeClasses, as Karpenter's conversion tool and
webhooks do it (nodepool.py, nodeclass.py), plus the step the webhooks leave to the user (kubelet.py).
Pure: documents in, v1 documents and the report out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterable

from ..imports import Document
from . import nodeclass, nodepool
from .common import DO_NOT_DISRUPT, GUIDE, RENAMED, REMOVED_ANNOTATIONS, Log, converted
from .kubelet import Pool, move_kubelet

PROVISIONER = ("karpenter.sh/v1alpha5", "Provisioner")
NODE_TEMPLATE = ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate")
NODEPOOL_V1BETA1 = ("karpenter.sh/v1beta1", "NodePool")
NODECLASS_V1BETA1 = ("karpenter.k8s.aws/v1beta1", "EC2NodeClass")
LEGACY = (PROVISIONER, NODE_TEMPLATE, NODEPOOL_V1BETA1, NODECLASS_V1BETA1)


@dataclass
class Migration:
    documents: list[Document] = field(default_factory=list)
    """Every input document, older Karpenter objects replaced by their v1 equivalents."""
    converted: list[Document] = field(default_factory=list)
    """The v1 objects made from older ones (what `--dry-run` prints), in input order."""
    log: Log = field(default_factory=Log)


def _kind(document: Document) -> tuple[str, str] | None:
    body = document.body
    if not isinstance(body, dict):
        return None
    return str(body.get("apiVersion", "")), str(body.get("kind", ""))


def _name(document: Document) -> str | None:
    metadata = document.body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def migrate_documents(documents: Iterable[Document]) -> Migration:
    result = Migration()
    log = result.log
    slots: list[Document | None] = []  # output order; None marks a converted object filled in below
    made: list[tuple[int, Document, dict]] = []  # (slot, original, v1 body)
    pools: list[Pool] = []
    for document in documents:
        kind = _kind(document)
        if kind not in LEGACY:
            slots.append(document)
            if kind is not None:
                _removed_annotations(document, log)
            continue
        name = _name(document)
        if name is None:
            log.error(document, "metadata.name", "required")
            continue
        if kind == PROVISIONER:
            found = nodepool.from_provisioner(document, log)
            if found is None:
                continue
            body, kubelet, provider = found
            pools.append(Pool(document, body, kubelet))
            made.append((len(slots), document, body))
            slots.append(None)
            if provider is not None:
                spec = nodeclass.from_v1alpha1(document, provider, "spec.provider", name, log, inline=True)
                if spec is not None:
                    made.append((len(slots), document, nodeclass.nodeclass_object(document, spec, name)))
                    slots.append(None)
        elif kind == NODEPOOL_V1BETA1:
            found_v1beta1 = nodepool.from_v1beta1(document, log)
            if found_v1beta1 is None:
                continue
            body, kubelet = found_v1beta1
            pools.append(Pool(document, body, kubelet))
            made.append((len(slots), document, body))
            slots.append(None)
        else:
            if kind == NODE_TEMPLATE:
                spec = nodeclass.from_v1alpha1(document, document.body.get("spec"), "spec", name, log, inline=False)
            else:
                spec = nodeclass.from_v1beta1(document, log)
            if spec is not None:
                made.append((len(slots), document, nodeclass.nodeclass_object(document, spec)))
                slots.append(None)

    # kubelet moves to the node classes, converted or already v1 (copied before changing them).
    classes: dict[str, dict] = {}
    for _, _, body in made:
        if body["kind"] == "EC2NodeClass":
            classes.setdefault(body["metadata"]["name"], body)
    v1_classes: dict[str, tuple[int, Document]] = {}
    for index, slot in enumerate(slots):
        if (slot is not None and _kind(slot) == ("karpenter.k8s.aws/v1", "EC2NodeClass") and (name := _name(slot))
                and name not in classes):
            classes[name] = copy.deepcopy(slot.body)
            v1_classes[name] = (index, slot)
    copies = move_kubelet(pools, classes, log)
    for name, (index, original) in v1_classes.items():
        if classes[name] != original.body:
            slots[index] = with_kubelet = converted(original, classes[name], " (kubelet added)",
                                                    _renamed(original, classes[name]))
            result.converted.append(with_kubelet)

    bodies = {slot: (original, body) for slot, original, body in made}
    origin: dict[str, Document] = {}
    for index, slot in enumerate(slots):
        if slot is None:
            original, body = bodies[index]
            what = ": spec.provider" if body["kind"] == "EC2NodeClass" and _kind(original) == PROVISIONER else ""
            slots[index] = slot = converted(original, body, what, _renamed(original, body))
            result.converted.append(slot)
            if body["kind"] == "EC2NodeClass":
                origin.setdefault(body["metadata"]["name"], original)
        elif _kind(slot) == ("karpenter.k8s.aws/v1", "EC2NodeClass") and (name := _name(slot)):
            origin.setdefault(name, slot)
        result.documents.append(slot)
    for new_name, (copied, copy_body) in copies.items():
        extra = converted(origin[copied], copy_body, f" (copy {new_name!r} for a kubelet setting)",
                          _renamed(origin[copied], copy_body))
        result.documents.append(extra)
        result.converted.append(extra)
    if result.converted:
        log.notes.append(f"converted {len(made)} object(s) to v1 following {GUIDE} and Karpenter's conversion tool and "
                         "webhooks; the `changed:` and `not carried over:` lines say what changed and what could not be carried")
    return result


def _renamed(original: Document, body: dict) -> tuple[tuple[str, str], ...]:
    """Key paths of the v1 `body` as `original` has them (common.RENAMED; AMI terms the conversion
    wrote itself come from amiFamily)."""
    kind = _kind(original)
    if body["kind"] == "NodePool":
        return RENAMED["Provisioner" if kind == PROVISIONER else "NodePool"]
    spec = original.body.get("spec") if isinstance(original.body.get("spec"), dict) else {}
    if kind == PROVISIONER:
        return RENAMED["provider"]
    if kind == NODE_TEMPLATE:
        ami = "spec.amiSelector" if "amiSelector" in spec else "spec.amiFamily"
        table = RENAMED["AWSNodeTemplate"]
    else:
        ami = "spec.amiSelectorTerms" if spec.get("amiSelectorTerms") else "spec.amiFamily"
        table = RENAMED["EC2NodeClass"]
    return tuple((new, ami if new == "spec.amiSelectorTerms" else old) for new, old in table)


def _removed_annotations(document: Document, log: Log) -> None:
    """Workloads in the input carrying annotations Karpenter v1 no longer reads (they are not imported)."""
    body = document.body
    for path, holder in (("metadata.annotations", body.get("metadata")),
                         ("spec.template.metadata.annotations", ((body.get("spec") or {}).get("template") or {}).get("metadata")
                          if isinstance(body.get("spec"), dict) and isinstance((body.get("spec") or {}).get("template"), dict)
                          else None)):
        annotations = holder.get("annotations") if isinstance(holder, dict) else None
        if isinstance(annotations, dict):
            for key in REMOVED_ANNOTATIONS:
                if key in annotations:
                    log.note(document, f"{path}.{key}", f"Karpenter v1 ignores this annotation: rename it to "
                             f"{DO_NOT_DISRUPT} in your manifests ({GUIDE}, \"Deprecated Annotations\")")
