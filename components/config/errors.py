"""Config errors that name the file and the key path, with hints for typos and v1beta1 leftovers."""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from kubefacts.errors import shown

from kubefacts.errors import LocatedError

# Keys from older Karpenter APIs that users still paste from blog posts.
LEGACY_KEYS = {
    "kubelet": "kubelet settings moved from the NodePool to the EC2NodeClass in karpenter.sh/v1; "
    "set them under nodeClasses.<name>.kubelet in the stack file",
    "ttlSecondsAfterEmpty": "ttlSecondsAfterEmpty is v1alpha5; use disruption.consolidationPolicy: WhenEmpty "
    "with disruption.consolidateAfter",
    "ttlSecondsUntilExpired": "ttlSecondsUntilExpired is v1alpha5; use expireAfter (e.g. 720h)",
    "consolidation": "consolidation.enabled is v1alpha5; use disruption.consolidationPolicy",
    "providerRef": "providerRef is v1alpha5; use nodeClass (the name of a node class of the stack)",
    "provider": "provider is v1alpha5; node settings live in the stack's nodeClasses",
    "nodeClassRef": "write nodeClass: <name>; the stack fills in the EC2NodeClass reference",
    "provisioners": "Provisioner is the v1alpha5 API; declare NodePools under nodePools",
    "kind": "team files are not Kubernetes objects (a Provisioner or NodePool manifest); "
    "declare NodePools under nodePools",
    "apiVersion": "team files are not Kubernetes objects; declare NodePools under nodePools",
}
LEGACY_VALUES = {
    "WhenUnderutilized": "WhenUnderutilized is the v1beta1 name; karpenter.sh/v1 calls it WhenEmptyOrUnderutilized",
    "WhenIdle": "there is no WhenIdle policy; for 'remove idle nodes' use WhenEmpty",
}
REQUIRED_HINTS = {
    "limits": "a NodePool needs limits (e.g. cpu and memory) so a runaway workload cannot buy unbounded capacity",
}


@dataclass(frozen=True)
class ConfigIssue:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        file = shown(self.file)  # a file name with an ANSI escape must not recolour the terminal
        return f"{file}: {self.path}: {self.message}" if self.path else f"{file}: {self.message}"


class ConfigError(LocatedError):
    """Every problem found in a stack's configuration; nothing may be declared while one exists.
    `file` and `key_path` are the first issue's; the message lists them all, one a line."""

    def __init__(self, issues: Iterable[ConfigIssue]):
        self.issues = list(issues)
        first = self.issues[0] if self.issues else None
        super().__init__(first.file if first else None, None, None, first.path if first else None, "")

    def render(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)


def format_path(loc: Iterable[Any], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        if part == "[key]":  # pydantic marks a bad dict key this way; the message says so already
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes and containers an annotation may hold."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the key at `loc` (used to suggest valid keys)."""
    current: Any = model
    for part in loc:
        candidates = _unwrap(current)
        current = None
        for candidate in candidates:
            origin = typing.get_origin(candidate)
            if isinstance(part, int) and origin is list:
                current = typing.get_args(candidate)[0]
            elif isinstance(part, str) and origin is dict:
                current = typing.get_args(candidate)[1]
            elif isinstance(part, str) and isinstance(candidate, type) and issubclass(candidate, BaseModel):
                for name, field in candidate.model_fields.items():
                    if part in (field.alias, name):
                        current = field.annotation
            if current is not None:
                break
        if current is None:
            return None
    for candidate in _unwrap(current):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _known_keys(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _nested_keys(model: type[BaseModel] | None, prefix: str = "", depth: int = 2) -> list[str]:
    """Dotted keys of sub-models, to say where a key belongs when it was written one level off."""
    if model is None or depth == 0:
        return []
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        for candidate in _unwrap(field.annotation):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                keys += [f"{prefix}{alias}.{k}" for k in _known_keys(candidate)]
                keys += _nested_keys(candidate, f"{prefix}{alias}.", depth - 1)
    return keys


def _message(error: ErrorDetails, root: type[BaseModel] | None) -> str:
    kind, loc, value = error["type"], tuple(error["loc"]), error.get("input")
    key = loc[-1] if loc else ""
    if kind == "extra_forbidden":
        if key in LEGACY_KEYS:
            return f"unknown key {key!r}: {LEGACY_KEYS[key]}"
        owner = _model_at(root, loc[:-1])
        known = _known_keys(owner)
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        if not close:
            nested = {k.rsplit(".", 1)[1]: k for k in reversed(_nested_keys(owner))}
            close = [nested[m] for m in difflib.get_close_matches(str(key), list(nested), n=1, cutoff=0.8)]
        hint = f"; did you mean {close[0]!r}?" if close else (f"; valid keys: {', '.join(known)}" if known else "")
        return f"unknown key {key!r}{hint}"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "").replace("'", "")
        message = f"{value!r} is not valid; use {expected}"
        return f"{message} ({LEGACY_VALUES[value]})" if isinstance(value, str) and value in LEGACY_VALUES else message
    if kind == "missing":
        return f"required key missing: {REQUIRED_HINTS[key]}" if key in REQUIRED_HINTS else "required key missing"
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    if kind.endswith(("_type", "_parsing")) and "input" in error:
        # pydantic's type errors do not say what was written ("Input should be a valid integer").
        message = f"{message}, got {_echo(value)}"
    return message


def _echo(value: Any) -> str:
    """The value the user wrote, as YAML-ish text, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def issues_from_validation(
    err: ValidationError, file: str, root: type[BaseModel] | None, prefix: str = "",
    remap: Callable[[tuple[Any, ...]], tuple[str, str] | None] | None = None,
) -> list[ConfigIssue]:
    """ConfigIssues for a pydantic error. `remap(loc) -> (file, path) | None` lets callers point a
    location back to where the value was written (e.g. an environment override)."""
    issues = []
    for error in err.errors():
        loc = tuple(error["loc"])
        where = remap(loc) if remap else None
        issue_file, path = where if where else (file, format_path(loc, prefix))
        issues.append(ConfigIssue(issue_file, path, _message(error, root)))
    return issues
