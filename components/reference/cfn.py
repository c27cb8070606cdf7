"""A YAML loader for CloudFormation templates that keeps the intrinsics (`!Sub`, `!GetAtt`,
`!Ref`, ...) as tagged values instead of failing on them, and the substitution of their
`${...}` placeholders at render time.

The generator stores a template's policy documents with the placeholders intact (`${AWS::Partition}`,
`${ClusterName}`, `${KarpenterNodeRole.Arn}`); the IAM and interruption builders fill them in
with `substitute` for the stack's partition, region, account, cluster and ARNs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class Intrinsic:
    """A CloudFormation intrinsic function call as written: `!Sub "..."` is Intrinsic("Sub", "...")."""

    name: str
    value: Any


class CfnLoader(yaml.SafeLoader):
    """SafeLoader plus every `!Fn` short form as an `Intrinsic`."""


def _construct(loader: CfnLoader, suffix: str, node: yaml.Node) -> Intrinsic:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)  # YAML has three kinds of node
        value = loader.construct_mapping(node, deep=True)
    return Intrinsic(suffix, value)


CfnLoader.add_multi_constructor("!", _construct)


def load_template(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=CfnLoader)  # noqa: S506 - a SafeLoader subclass


def as_placeholders(value: Any) -> Any:
    """A template value as plain JSON with `${...}` placeholders: `!Sub` of a JSON document is
    that document (its placeholders sit inside strings), `!GetAtt X.Arn` is `${X.Arn}`, `!Ref X`
    is `${X}`. Anything else (Fn::If, Fn::Join, ...) is refused: a new upstream construct must
    be looked at, not stored half-understood."""
    if isinstance(value, Intrinsic):
        if value.name == "Sub" and isinstance(value.value, str):
            text = value.value
            if text.lstrip().startswith("{"):
                return json.loads(text)
            return text
        if value.name == "GetAtt":
            target = value.value if isinstance(value.value, str) else ".".join(value.value)
            return "${" + target + "}"
        if value.name == "Ref" and isinstance(value.value, str):
            return "${" + value.value + "}"
        raise ValueError(f"unsupported CloudFormation intrinsic !{value.name} {value.value!r}")
    if isinstance(value, dict):
        return {k: as_placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_placeholders(v) for v in value]
    return value


_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def substitute(value: Any, values: dict[str, str]) -> Any:
    """`value` with every `${Name}` replaced from `values` (keyed by Name), in keys and strings.
    A placeholder without a value is an error: a policy must never reach IAM with `${...}` in it."""
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            if match.group(1) not in values:
                raise KeyError(f"no value for placeholder ${{{match.group(1)}}}")
            return values[match.group(1)]

        return _PLACEHOLDER.sub(replace, value)
    if isinstance(value, dict):
        return {substitute(k, values): substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    return value
