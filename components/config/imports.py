"""The importer's core: Karpenter NodePool and EC2NodeClass objects (karpenter.sh/v1,
karpenter.k8s.aws/v1) turned into a team file and a `nodeClasses` mapping, with what changed, what
could not be carried over, and every refusal named by file and key path. No files, no printing:
`offline/importer.py` is the shell, `components/roundtrip.py` the check."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationError

from .ceilings import ceilings as policy_ceilings
from kubefacts.labels import check_dns_label
from kubefacts.validation import validate

from .errors import ConfigIssue, format_path, issues_from_validation
from .nodeclasses import ROOT_DEVICE, NodeClass
from .teams import Team

NODEPOOL_API, NODECLASS_API = "karpenter.sh/v1", "karpenter.k8s.aws/v1"
# A team's NodePools must have limits; an original without them gets the strictest environment's
# ceilings (the importer passes those of the project's stacks; here, the policy pack's default row).
IMPORT_LIMITS = {resource: policy_ceilings(None)[resource] for resource in ("cpu", "memory")}
# Karpenter's root volume when an EC2NodeClass declares no blockDeviceMappings (amifamily
# DefaultEBS: 20Gi gp3 encrypted; Windows 50Gi), written out so the rendered class keeps it.
KARPENTER_ROOT_SIZE = {"Windows2019": "50Gi", "Windows2022": "50Gi", "Windows2025": "50Gi"}
KARPENTER_DEFAULT_ROOT_SIZE = "20Gi"
# EC2NodeClass keys the stack manages (the node role and its access entry, the cluster's subnets
# and security group): dropped on import, reported.
MANAGED_NODECLASS_KEYS = ("role", "subnetSelectorTerms", "securityGroupSelectorTerms")
_TEMPLATE_SPEC_KEYS = ("requirements", "taints", "startupTaints", "expireAfter", "terminationGracePeriod")
_SPEC_KEYS = ("disruption", "limits", "weight", "replicas")


@dataclass(frozen=True)
class Document:
    """One Kubernetes object read from `file`; `where` locates it there (`document 2`, `items[0]`)."""

    file: str
    where: str
    body: Any
    renamed: tuple[tuple[str, str], ...] = ()
    """For an object converted from an older API (components/config/migrate): (v1 key path, the
    original's key path) pairs, so that messages name what the user wrote."""
    source: str = ""
    """For a converted object: where the original is (`where` then says it was converted)."""

    def at(self, path: str) -> str:
        for new, old in self.renamed:
            if path == new or path.startswith((f"{new}.", f"{new}[")):
                return f"{self.source}: {old}{path[len(new):]}"
        return f"{self.where}: {path}" if path else self.where


def _refusal_at(document: Document, obj: str | None, key_path: str | None) -> str:
    """Where a refusal points: the key the user wrote when the object was converted from an older
    API (its renamed paths), else the object and its key path, in the validator's words."""
    path = key_path or ""
    if any(path == new or path.startswith((f"{new}.", f"{new}[")) for new, _ in document.renamed):
        return document.at(path)
    return document.at(f"{obj}: {path}" if obj else path)


@dataclass
class ImportResult:
    team: dict[str, Any] | None = None
    node_classes: dict[str, Any] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    """What the platform writes differently (its additions, renames, explicit defaults)."""
    losses: list[str] = field(default_factory=list)
    """What could not be carried over (components.roundtrip finds it)."""
    notes: list[str] = field(default_factory=list)
    """Outside the specs: skipped objects, object metadata the platform sets itself."""
    errors: list[ConfigIssue] = field(default_factory=list)
    """Invalid input, or input the platform refuses: nothing is written."""
    imported: list[str] = field(default_factory=list)


def documents(file: str, content: Iterable[Any]) -> Iterator[Document]:
    """The objects of a YAML stream, `kind: List` items unpacked; empty documents skipped."""
    for index, body in enumerate(content):
        if body is None:
            continue
        where = f"document {index + 1}"
        if isinstance(body, dict) and body.get("kind") == "List" and isinstance(body.get("items"), list):
            for item_index, item in enumerate(body["items"]):
                yield Document(file, f"{where}: items[{item_index}]", item)
        else:
            yield Document(file, where, body)


def _pool_config_path(loc: tuple[Any, ...]) -> str:
    """Where a team-file location (`nodePools[i].<key>...`) sits in the original NodePool."""
    if not loc:
        return "spec"
    head, rest = loc[0], loc[1:]
    if head == "name":
        return "metadata.name"
    if head == "nodeClass":
        return "spec.template.spec.nodeClassRef.name"
    if head in ("labels", "annotations"):
        return format_path(rest, f"spec.template.metadata.{head}")
    if head in _TEMPLATE_SPEC_KEYS:
        return format_path(rest, f"spec.template.spec.{head}")
    return format_path(rest, f"spec.{head}")


def nodepool_entry(document: Document, team: str, result: ImportResult,
                   default_limits: dict[str, str] = IMPORT_LIMITS) -> dict[str, Any] | None:
    """The team-file entry for one NodePool; problems go to `result.errors`."""
    body, errors = document.body, result.errors
    name = str((body.get("metadata") or {}).get("name") or "")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        errors.append(ConfigIssue(document.file, document.at("spec"), "a NodePool needs a spec"))
        return None
    template = spec.get("template") or {}
    template_metadata = template.get("metadata") or {}
    template_spec = template.get("spec") or {}
    ref = template_spec.get("nodeClassRef") or {}
    if not isinstance(ref, dict) or ref.get("group") != "karpenter.k8s.aws" or ref.get("kind") != "EC2NodeClass":
        errors.append(ConfigIssue(document.file, document.at("spec.template.spec.nodeClassRef"),
                                  "must reference a karpenter.k8s.aws EC2NodeClass (group and kind), the only node class the "
                                  "platform declares"))
        return None
    pool_name = name.removeprefix(f"{team}-") if name.startswith(f"{team}-") else name
    entry: dict[str, Any] = {"name": pool_name}
    if pool_name == name:
        result.changes.append(f"{document.file}: {document.at('metadata.name')}: NodePool {name!r} renders as "
                              f"'{team}-{name}' (NodePools are named <team>-<pool>)")
    entry["nodeClass"] = ref.get("name")
    for key in ("labels", "annotations"):
        if key in template_metadata:
            entry[key] = copy.deepcopy(template_metadata[key])
    for key in _TEMPLATE_SPEC_KEYS:
        if key in template_spec:
            entry[key] = copy.deepcopy(template_spec[key])
    for key in _SPEC_KEYS:
        if key in spec:
            entry[key] = copy.deepcopy(spec[key])
    if "limits" not in spec and "replicas" not in spec:
        entry["limits"] = dict(default_limits)
        result.changes.append(f"{document.file}: {document.at('spec.limits')}: none in the original; added "
                              f"{default_limits} (every dynamic NodePool here has limits; these are the strictest "
                              "environment's ceilings, policy nodepool-limits-within-ceiling: adjust them)")
    disruption = spec.get("disruption")
    if disruption is None or (isinstance(disruption, dict) and "consolidateAfter" not in disruption):
        # Same as the CRD's default, written so that the team file says what runs.
        entry["disruption"] = {**(disruption or {}), "consolidateAfter": "0s"}
    return entry


def nodeclass_entry(document: Document, result: ImportResult) -> dict[str, Any] | None:
    """The `nodeClasses` entry for one EC2NodeClass: the spec minus the keys the stack manages."""
    spec = document.body.get("spec")
    if not isinstance(spec, dict):
        result.errors.append(ConfigIssue(document.file, document.at("spec"), "an EC2NodeClass needs a spec"))
        return None
    entry = {k: copy.deepcopy(v) for k, v in spec.items() if k not in MANAGED_NODECLASS_KEYS}
    for key in MANAGED_NODECLASS_KEYS:
        if spec.get(key) in ("$KARPENTER_NODE_ROLE", [{"tags": {"karpenter.sh/discovery": "$CLUSTER_NAME"}}]):
            continue  # the migration's placeholders: it already said what replaces them
        if key in spec:
            what = {"role": "the stack's node role (which has the cluster access entry)",
                    "subnetSelectorTerms": "the stack's subnets (cluster.subnets)",
                    "securityGroupSelectorTerms": "the stack's security group (cluster.securityGroup)"}[key]
            result.changes.append(f"{document.file}: {document.at(f'spec.{key}')}: replaced by {what}; set "
                                  f"nodeClasses.<name>.{key} to keep the original")
    terms = spec.get("amiSelectorTerms")
    aliases = [t.get("alias") for t in terms if isinstance(t, dict)] if isinstance(terms, list) else []
    if any(isinstance(a, str) and a.endswith("@latest") for a in aliases):
        entry["allowLatestAmi"] = True
        result.changes.append(f"{document.file}: {document.at('spec.amiSelectorTerms')}: '@latest' floats; added "
                              "allowLatestAmi: true (policy nodeclass-ami-pinned flags it outside dev)")
    if "blockDeviceMappings" not in spec:
        family = spec.get("amiFamily") or _alias_family(aliases)
        if family in ROOT_DEVICE:
            size = KARPENTER_ROOT_SIZE.get(family, KARPENTER_DEFAULT_ROOT_SIZE)
            entry["rootVolume"] = {"size": size}
            result.changes.append(f"{document.file}: {document.at('spec.blockDeviceMappings')}: none in the original; "
                                  f"Karpenter's default for {family} written out (encrypted gp3, {size})")
    return entry


def _alias_family(aliases: list[Any]) -> str | None:
    names = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket", "windows2019": "Windows2019",
             "windows2022": "Windows2022", "windows2025": "Windows2025"}
    for alias in aliases:
        if isinstance(alias, str):
            return names.get(alias.split("@", 1)[0])
    return None


def import_documents(docs: Iterable[Document], team: str, default_limits: dict[str, str] = IMPORT_LIMITS) -> ImportResult:
    """A team file and a `nodeClasses` mapping for every NodePool and EC2NodeClass of `docs`
    (older API versions are converted first: components/config/migrate)."""
    result = ImportResult()
    pools: list[tuple[Document, dict[str, Any]]] = []
    classes: dict[str, Document] = {}
    for document in docs:
        body = document.body
        if not isinstance(body, dict):
            result.errors.append(ConfigIssue(document.file, document.where, "expected a Kubernetes object (a mapping)"))
            continue
        api_version, kind = str(body.get("apiVersion", "")), str(body.get("kind", ""))
        name = (body.get("metadata") or {}).get("name") if isinstance(body.get("metadata"), dict) else None
        if kind in ("NodePool", "EC2NodeClass") and api_version != (NODEPOOL_API if kind == "NodePool" else NODECLASS_API):
            expected = NODEPOOL_API if kind == "NodePool" else NODECLASS_API
            result.errors.append(ConfigIssue(document.file, document.at("apiVersion"),
                                             f"{api_version!r}: {expected} is imported, and karpenter.sh/v1alpha5 and "
                                             "v1beta1 objects converted; this version is neither"))
        elif kind not in ("NodePool", "EC2NodeClass"):
            result.notes.append(f"{document.file}: {document.where}: skipped {kind or 'an object without kind'} "
                                 f"{name or ''}".rstrip() + " (only NodePool and EC2NodeClass are imported)")
        elif not isinstance(name, str) or not name:
            result.errors.append(ConfigIssue(document.file, document.at("metadata.name"), "required"))
        elif refusals := validate(body, origin=document.file):
            # The one validator of Karpenter objects (CRD schema, CEL, runtime checks), in its words.
            result.errors += [ConfigIssue(document.file, _refusal_at(document, e.obj, e.key_path), e.message)
                              for e in refusals]
        elif kind == "NodePool":
            entry = nodepool_entry(document, team, result, default_limits)
            if entry is not None:
                pools.append((document, entry))
                _note_metadata(document, result)
        else:
            if name in classes:
                result.errors.append(ConfigIssue(document.file, document.at("metadata.name"),
                                                 f"EC2NodeClass {name!r} is also defined in {classes[name].file}"))
                continue
            entry = nodeclass_entry(document, result)
            if entry is not None:
                classes[name] = document
                result.node_classes[name] = entry
                _note_metadata(document, result)
    _validate(pools, classes, team, result)
    if not result.errors:
        result.team = {"name": team, "nodePools": [entry for _, entry in pools]}
        result.imported = [f"NodePool {team}-{entry['name']}" for _, entry in pools] + \
                          [f"EC2NodeClass {name}" for name in result.node_classes]
    return result


def _note_metadata(document: Document, result: ImportResult) -> None:
    metadata = document.body.get("metadata") or {}
    extra = sorted(k for k in metadata if k in ("labels", "annotations") and metadata[k])
    for key in extra:
        result.notes.append(f"{document.file}: {document.at(f'metadata.{key}')}: not copied "
                            f"({', '.join(sorted(metadata[key]))}): object metadata, not spec; the platform sets its own")


def _validate(pools: list[tuple[Document, dict[str, Any]]], classes: dict[str, Document], team: str,
              result: ImportResult) -> None:
    """The platform's own config validation (CRD schema, CEL and Karpenter's runtime rules), each
    problem named by the original file and key path."""
    seen: dict[str, Document] = {}
    for document, entry in pools:
        if entry["name"] in seen:
            result.errors.append(ConfigIssue(document.file, document.at("metadata.name"),
                                             f"NodePool {entry['name']!r} is also defined in {seen[entry['name']].file}"))
        seen.setdefault(entry["name"], document)
        try:
            Team.model_validate({"name": team, "nodePools": [entry]})
        except ValidationError as err:
            for issue in issues_from_validation(err, document.file, Team):
                result.errors.append(_relocate(issue, document, _pool_config_path))
        if len(f"{team}-{entry['name']}") > 63:
            result.errors.append(ConfigIssue(document.file, document.at("metadata.name"),
                                             f"rendered name {team}-{entry['name']!r} is longer than 63 characters"))
    for name, document in classes.items():
        try:
            NodeClass.model_validate(result.node_classes[name])
        except ValidationError as err:
            for issue in issues_from_validation(err, document.file, NodeClass):
                result.errors.append(ConfigIssue(document.file, document.at(f"spec.{issue.path}" if issue.path else "spec"),
                                                 issue.message))
        if not _dns_label(name):
            result.errors.append(ConfigIssue(document.file, document.at("metadata.name"),
                                             f"{name!r}: node class names are lower-case letters, digits and '-'"))
    for document, entry in pools:
        if entry.get("nodeClass") not in classes:
            result.changes.append(f"{document.file}: {document.at('spec.template.spec.nodeClassRef.name')}: "
                                  f"EC2NodeClass {entry.get('nodeClass')!r} was not among the input; the stack must define it")


def _relocate(issue: ConfigIssue, document: Document, mapper: Callable[[tuple[Any, ...]], str]) -> ConfigIssue:
    """A Team validation issue (`nodePools[0].<key>`) at the original NodePool's key path."""
    path = issue.path
    if path.startswith("nodePools[0]"):
        rest = path.removeprefix("nodePools[0]").lstrip(".")
        return ConfigIssue(document.file, document.at(mapper(_split(rest))), issue.message)
    return ConfigIssue(document.file, document.at("spec"), issue.message)


def _split(path: str) -> tuple[Any, ...]:
    parts: list[Any] = []
    for chunk in path.replace("[", ".[").split("."):
        if not chunk:
            continue
        parts.append(int(chunk[1:-1]) if chunk.startswith("[") and chunk[1:-1].isdigit() else chunk)
    return tuple(parts)


def _dns_label(name: str) -> bool:
    try:
        check_dns_label(name)
    except ValueError:
        return False
    return True
