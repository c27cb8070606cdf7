"""The API server's judgment of a Karpenter object: the served version's `openAPIV3Schema` (with
jsonschema, Draft 4, `pattern` evaluated by RE2 as Go does) and its CEL `x-kubernetes-validations`
rules (with cel-python; regexes by RE2). Moved here from components/crds.py so the provisioner's
wheel judges as the config and the render do.

The CRDs are a supported release's (kubefacts/validation/crds/, written by `make reference`), or,
for tests, a folder of upstream CRD YAML files.

Where we deliberately differ from the API server (all stricter, none looser):
- unknown fields are errors; the API server silently prunes them (a typo would vanish);
- `format: int32`/`int64` ranges and `date-time` are checked (jsonschema skips unknown formats);
- transition rules (those reading `oldSelf`) only run on updates; they are listed, not run.
Quirks handled: `x-kubernetes-int-or-string` (integer or string), `nullable`, structural
defaulting (`default` values are applied before validation, as the API server does).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema
import re2
import yaml

from ..labels import check_label_key, check_label_value
from .crds import release_crds, releases
from .metadata import MAX_ANNOTATIONS_BYTES

_DNS_SUBDOMAIN = re2.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_RFC3339 = re2.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """The `pattern` keyword with Go RE2 semantics, as the API server evaluates it: Python's `re`
    lets `$` match before a final newline, so "batch-jobs\n" would pass a `^...$` pattern."""
    if isinstance(instance, str) and re2.search(pattern, instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 4 (the CRDs' dialect) with the pattern keyword evaluated by RE2.
_Validator = jsonschema.validators.extend(jsonschema.Draft4Validator, {"pattern": _re2_pattern})
_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time")(lambda v: not isinstance(v, str) or bool(_RFC3339.match(v)))
_FORMATS.checks("int32")(lambda v: not isinstance(v, int) or -(2**31) <= v < 2**31)
_FORMATS.checks("int64")(lambda v: not isinstance(v, int) or -(2**63) <= v < 2**63)


@dataclass(frozen=True)
class Violation:
    """One reason the API server would refuse (or we refuse, see module doc) an object."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


@dataclass(frozen=True)
class CelRule:
    kind: str
    version: str
    path: str
    rule: str
    message: str

    @property
    def transition(self) -> bool:
        return "oldSelf" in self.rule


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def to_json_schema(node: Any) -> Any:
    """An OpenAPI v3 structural schema as JSON Schema (draft 4 semantics), made strict."""
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    schema = {k: to_json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    # The API server prunes unknown fields; we reject them so a misspelt key cannot vanish.
    if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        schema["additionalProperties"] = False
    return schema


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Structural defaulting as the API server does it before validation: a missing property
    with a `default` gets it, recursively, inside objects that exist."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = apply_defaults(sub, value[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in set(value) - set(schema.get("properties") or {}):
                value[key] = apply_defaults(extra, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(schema["items"], item) for item in value]
    return value


def _walk_rules(schema: dict[str, Any], value: Any, path: tuple[Any, ...]
                ) -> Iterator[tuple[tuple[Any, ...], dict[str, Any], Any]]:
    """(path, rule, value) for every CEL rule whose field is present in `value`."""
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in value:
                yield from _walk_rules(sub, value[key], (*path, key))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in properties:
                    yield from _walk_rules(extra, value[key], (*path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _walk_rules(schema["items"], item, (*path, index))


def _schema_rules(schema: dict[str, Any], path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule
    for key, sub in (schema.get("properties") or {}).items():
        yield from _schema_rules(sub, (*path, key))
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), dict):
            yield from _schema_rules(schema[key], (*path, "*" if key == "additionalProperties" else "[]"))


class Cel:
    """cel-python with the Kubernetes CEL library functions the Karpenter CRDs use."""

    def __init__(self) -> None:
        import celpy  # imported lazily: only once an object is judged
        from celpy import celtypes

        self._celpy, self._types = celpy, celtypes
        self._env = celpy.Environment()
        self._programs: dict[str, Any] = {}
        self._memo: dict[tuple[str, str], bool] = {}

    def _functions(self) -> dict[str, Any]:
        types = self._types

        def find(text: Any, pattern: Any) -> Any:  # Kubernetes regex library: first match or ""
            match = re2.search(str(pattern), str(text))  # CEL regexes are RE2
            return types.StringType(match.group(0) if match else "")

        def split(text: Any, separator: Any) -> Any:  # cel-go strings extension
            return types.ListType([types.StringType(p) for p in str(text).split(str(separator))])

        return {"find": find, "split": split}

    # CEL macros, expanded by the parser rather than looked up as functions.
    MACROS = frozenset({"has", "all", "exists", "exists_one", "filter", "map"})

    def supported(self) -> set[str]:
        from celpy.evaluation import base_functions

        return set(base_functions) | set(self._functions()) | self.MACROS

    @staticmethod
    def called(rule: str) -> set[str]:
        """Names of the functions and methods a rule calls."""
        without_strings = re.sub(r"'[^']*'|\"[^\"]*\"", "''", rule)
        return set(re.findall(r"([A-Za-z_]\w*)\s*\(", without_strings))

    def program(self, rule: str) -> Any:
        if rule not in self._programs:
            self._programs[rule] = self._env.program(self._env.compile(rule), functions=self._functions())
        return self._programs[rule]

    def holds(self, rule: str, value: Any) -> bool:
        """True when the rule holds; an evaluation error counts as a failure (as on the server).
        Memoized by (rule, value): cel-python takes milliseconds per evaluation, and the objects
        of a cluster dump repeat the same values (requirement keys, specs) many times."""
        try:
            key = (rule, json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            return self._holds(rule, value)
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= 65536:
                self._memo.clear()
            found = self._memo[key] = self._holds(rule, value)
        return found

    def _holds(self, rule: str, value: Any) -> bool:
        try:
            result = self.program(rule).evaluate({"self": self._celpy.json_to_cel(value)})
        except self._celpy.CELEvalError as err:
            if "undeclared reference" in str(err):  # our evaluator lacks a function: not the object's fault
                raise RuntimeError(f"CEL rule uses a function the evaluator lacks: {rule}") from err
            return False
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            # cel-python raises these on values of the wrong type (a list where the schema says
            # object); the schema check reports the type, the rule cannot hold.
            return False
        return isinstance(result, self._types.BoolType) and bool(result)


class CrdValidator:
    """Every CRD of a release (a version from the project's data, the newest when None) or of a
    folder of CRD YAML files, by group and kind; `validate(manifest)` lists the violations."""

    def __init__(self, source: Path | str | None = None):
        self.crds: dict[tuple[str, str], dict[str, Any]] = {}
        if isinstance(source, Path):
            for path in sorted(source.glob("*.yaml")):
                crd = yaml.safe_load(path.read_text())
                self.crds[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd
        else:
            for crd in release_crds(source or releases()[-1]).values():
                versions = [{"name": v["name"], "served": v["served"], "storage": v["storage"],
                             "schema": {"openAPIV3Schema": v["schema"]}} for v in crd["versions"]]
                spec = {"group": crd["group"], "names": {"kind": crd["kind"], "plural": crd["plural"]}, "versions": versions}
                self.crds[(crd["group"], crd["kind"])] = {"spec": spec}
        self._validators: dict[tuple[str, str, str], Any] = {}

    @cached_property
    def cel(self) -> Cel:
        return Cel()

    def served_schema(self, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        crd = self.crds.get((group, kind))
        for served in (crd or {}).get("spec", {}).get("versions", []):
            if served["name"] == version and served.get("served"):
                schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
                return schema
        return None

    def rules(self) -> list[CelRule]:
        """Every CEL rule of every served version."""
        found = []
        for (_, kind), crd in sorted(self.crds.items()):
            for version in crd["spec"]["versions"]:
                if version.get("served"):
                    for path, rule in _schema_rules(version["schema"]["openAPIV3Schema"]):
                        found.append(CelRule(kind, version["name"], _path(path), rule["rule"], rule.get("message", "")))
        return found

    def validate(self, manifest: dict[str, Any]) -> list[Violation]:
        api_version, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
        schema = self.served_schema(api_version, kind)
        if schema is None:
            return [Violation("", f"no served CRD version for {kind} {api_version}")]
        document = apply_defaults(schema, copy.deepcopy(manifest))
        violations = self._metadata(document.get("metadata") if document.get("metadata") is not None else {})
        key = (api_version, kind, "schema")
        if key not in self._validators:
            self._validators[key] = _Validator(to_json_schema(schema), format_checker=_FORMATS)
        for error in sorted(self._validators[key].iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
            violations.append(Violation(_path(error.absolute_path), error.message))
        for path, rule, value in _walk_rules(schema, document, ()):
            if "oldSelf" in rule["rule"]:
                continue  # transition rule: only evaluated on update
            if not self.cel.holds(rule["rule"], value):
                violations.append(Violation(_path(path), rule.get("message") or f"failed rule {rule['rule']}"))
        return violations

    @staticmethod
    def _metadata(metadata: Any) -> list[Violation]:
        if not isinstance(metadata, dict):
            return [Violation("metadata", f"expected a mapping, got {type(metadata).__name__}")]
        violations = []
        name = metadata.get("name", "")
        if not isinstance(name, str) or not name or len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            violations.append(Violation("metadata.name", f"{name!r} is not a DNS-1123 subdomain"))
        for field, check_value in (("labels", True), ("annotations", False)):
            entries = metadata.get(field) or {}
            if not isinstance(entries, dict):
                violations.append(Violation(f"metadata.{field}", f"expected a mapping, got {type(entries).__name__}"))
                continue
            for label, text in entries.items():
                if not isinstance(label, str) or not isinstance(text, str):
                    violations.append(Violation(f"metadata.{field}.{label}", "keys and values must be strings"))
                    continue
                try:
                    check_label_key(label)
                    if check_value:
                        check_label_value(text)
                except ValueError as err:
                    violations.append(Violation(f"metadata.{field}.{label}", str(err)))
        found = metadata.get("annotations")
        annotations: dict[Any, Any] = found if isinstance(found, dict) else {}
        total: int = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
        if total > MAX_ANNOTATIONS_BYTES:
            violations.append(Violation("metadata.annotations", f"annotations total {total:,} bytes, more than 256 KiB"))
        return violations


def is_karpenter_object(manifest: dict[str, Any]) -> bool:
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    return group in ("karpenter.sh", "karpenter.k8s.aws")


@functools.cache
def validator_for(version: str | None = None) -> CrdValidator:
    """The (shared, cached) validator of a supported release; compiled schemas and CEL programs are reused."""
    return CrdValidator(version or releases()[-1])


def validate_manifests(manifests: list[dict[str, Any]], validator: CrdValidator | None = None,
                       version: str | None = None) -> dict[str, list[Violation]]:
    """Violations of every Karpenter object, keyed `<Kind>/<name>`; empty lists for valid ones."""
    validator = validator or validator_for(version)
    return {
        f"{m['kind']}/{(m.get('metadata') or {}).get('name')}": validator.validate(m)
        for m in manifests if is_karpenter_object(m)
    }
