"""Build policy arguments the way the CrossGuard analyzer does, and run one policy.

pulumi_policy's `_PolicyAnalyzerServicer.AnalyzeStack` receives each resource's properties as a
protobuf Struct, turns them into a dict with `json_format.MessageToDict` (numbers become
floats), `deserialize_properties` (secrets unwrapped) and wraps them in `unknown_checking_proxy`;
then it builds `PolicyResourceOptions`, `PolicyResource`s (parent, dependencies and
property dependencies linked) and one `StackValidationArgs` with the policy's config. We do the
same, then call the policy's `validate` with a collecting `report_violation`.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from google.protobuf import json_format, struct_pb2
from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, StackValidationArgs
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies.pack import BY_NAME
from policies.crossguard import build_policy

UNKNOWN = UNKNOWN_STRING_VALUE  # what the engine sends for a value not known during preview
PROJECT, STACK = "karpenter-platform", "test"


def urn_of(type_token: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_token}::{name}"


def resource(type_token: str, name: str, props: Mapping[str, Any], *, protect: bool = False,
             depends: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """A resource as the engine would describe it to the analyzer (plain data; see to_args)."""
    return {"type": type_token, "name": name, "urn": urn_of(type_token, name), "props": copy.deepcopy(dict(props)),
            "protect": protect, "depends": dict(depends or {})}


def _struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(props)
    return struct


def to_args(resources: list[dict[str, Any]], config: Mapping[str, Any] | None = None) -> StackValidationArgs:
    built: dict[str, PolicyResource] = {}
    for r in resources:
        props = unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(_struct(r["props"]))))
        opts = PolicyResourceOptions(r["protect"], [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)
        built[r["urn"]] = PolicyResource(r["type"], props, r["urn"], r["name"], opts, None, None, [], {})
    for r in resources:
        for key, urns in r["depends"].items():
            built[r["urn"]].property_dependencies[key] = [built[u] for u in urns if u in built]
    return StackValidationArgs(list(built.values()), dict(config or {}), {})


def run(policy_name: str, resources: list[dict[str, Any]], environment: str | None = "prod",
        config: Mapping[str, Any] | None = None) -> list[tuple[str | None, str]]:
    """Violations (urn, message) the CrossGuard policy reports for these resources."""
    reported: list[tuple[str | None, str]] = []
    policy = build_policy(BY_NAME[policy_name], environment)
    result = policy.validate(to_args(resources, config), lambda message, urn=None: reported.append((urn, message)))
    assert result is None  # synchronous policies
    return reported


def messages(policy_name: str, resources: list[dict[str, Any]], **kwargs: Any) -> list[str]:
    return [message for _, message in run(policy_name, resources, **kwargs)]


def from_render(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A resources.json entry (offline render) as the engine would describe it to the analyzer."""
    built = resource(entry["type"], entry["name"], entry.get("inputs") or {}, protect=bool(entry["options"].get("protect")))
    built["urn"] = entry["urn"]
    return built


def run_all(resources: list[dict[str, Any]], environment: str | None) -> set[tuple[str, str | None, str]]:
    """(policy, urn, message) of every policy of the pack, through the CrossGuard adapter."""
    from policies.pack import ALL

    found: set[tuple[str, str | None, str]] = set()
    args = to_args(resources)
    for spec in ALL:
        policy = build_policy(spec, environment)
        policy.validate(args, lambda message, urn=None, name=spec.name: found.add((name, urn, message)))
    return found
