"""`python -m components.config.reference > docs/configuration.md`: the configuration reference,
generated from the models' field docstrings and defaults so it cannot drift from the code."""

from __future__ import annotations

import json
import sys
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .stack import StackSettings
from .teams import Team


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None))
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()
    else:
        return "**required**"
    if isinstance(value, BaseModel):
        return "see type"
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        value = [v.model_dump(by_alias=True, exclude_none=True) for v in value]
    if isinstance(value, dict) and value and isinstance(next(iter(value.values())), BaseModel):
        return "`" + ", ".join(value) + "` with defaults"
    return f"`{json.dumps(value)}`"


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                seen.append(annotation)
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            return
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(root)
    return seen


def _table(model: type[BaseModel]) -> list[str]:
    lines = [f"### {model.__name__}", "", (model.__doc__ or "").strip().replace("\n", " "), "",
             "| key | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        description = (field.description or "").replace("\n", " ").replace("|", "\\|")
        lines.append(f"| `{field.alias or name}` | {_type_name(field.annotation)} | {_default(field)} | {description} |")
    return lines + [""]


def render() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from `components/config/` by `make docs`; do not edit by hand.",
        "",
        "## Stack file: `stacks/Pulumi.<stack>.yaml`",
        "",
        "Keys under `config:` with the `karpenter-platform:` prefix (e.g. `karpenter-platform:cluster`).",
        "The secret `karpenter-platform:odigosOnPremToken` is set with `pulumi config set --secret`.",
        "",
    ]
    for model in _models(StackSettings):
        lines += _table(model)
    lines += ["## Team file: `stacks/teams/<team>.yaml`", ""]
    for model in _models(Team):
        if model not in _models(StackSettings):
            lines += _table(model)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
