"""IAM policies, and the node role facts other modules share."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from .model import (ACCESS_ENTRY, IAM_POLICY, IAM_ROLE, IAM_ROLE_POLICY, SQS_QUEUE_POLICY, UNKNOWN, Resource, Stack,
                    Violation, as_list, json_document)
from .registry import IntegerSetting, policy

EC2_SERVICE_PRINCIPALS = ("ec2.amazonaws.com", "ec2.amazonaws.com.cn")


def role_name_from_arn(arn: str) -> str:
    """`arn:aws:iam::123456789012:role/path/Name` -> `Name`."""
    return arn.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Document:
    resource: Resource
    field: str
    document: Any  # parsed object, UNKNOWN, or None
    text: str | None
    error: str | None = None


def documents(stack: Stack) -> Iterator[Document]:
    """Every IAM policy document the stack declares (identity, trust, inline and queue policies)."""
    fields = {IAM_POLICY: ("policy",), IAM_ROLE_POLICY: ("policy",), SQS_QUEUE_POLICY: ("policy",),
              IAM_ROLE: ("assumeRolePolicy",)}
    for resource in stack.resources:
        for key in fields.get(resource.type, ()):
            yield _document(resource, key, resource.prop(key))
        if resource.type == IAM_ROLE:
            inline = resource.prop("inlinePolicies")
            if isinstance(inline, list):
                for index, item in enumerate(inline):
                    if isinstance(item, Mapping):
                        yield _document(resource, f"inlinePolicies[{index}].policy", item.get("policy"))


def _document(resource: Resource, field: str, value: Any) -> Document:
    try:
        parsed = json_document(value)
    except ValueError as err:
        return Document(resource, field, None, value if isinstance(value, str) else None, f"not a JSON document: {err}")
    return Document(resource, field, parsed, value if isinstance(value, str) else None)


def statements(document: Any) -> list[Mapping[str, Any]]:
    if not isinstance(document, Mapping):
        return []
    return [s for s in as_list(document.get("Statement")) if isinstance(s, Mapping)]


def _allows(statement: Mapping[str, Any]) -> bool:
    return statement.get("Effect") == "Allow"


def _trusts_ec2(role: Resource) -> bool:
    try:
        trust = json_document(role.prop("assumeRolePolicy"))
    except ValueError:
        return False
    for statement in statements(trust):
        principal = statement.get("Principal")
        services = as_list(principal.get("Service")) if isinstance(principal, Mapping) else []
        if _allows(statement) and any(s in EC2_SERVICE_PRINCIPALS for s in services):
            return True
    return False


# Access entry types that let EC2 nodes join: a role shared with Windows nodes gets EC2_WINDOWS
# (EKS takes a principal in one entry only), which Linux nodes join with too.
NODE_ENTRY_TYPES = ("EC2_LINUX", "EC2_WINDOWS")


@dataclass(frozen=True)
class NodeRoles:
    """What the stack says about the nodes' role."""

    names_with_access_entry: frozenset[str]
    arns_with_access_entry: frozenset[str]
    entries: int
    """Node access entries (EC2_LINUX or EC2_WINDOWS) the stack declares."""
    unresolved_entries: int
    """Entries whose principal is not known yet (and cannot be followed to a Role)."""
    ec2_role_names: frozenset[str]
    """Roles the stack creates that EC2 may assume (names known)."""

    @property
    def names(self) -> frozenset[str]:
        return self.names_with_access_entry | self.ec2_role_names


def node_roles(stack: Stack) -> NodeRoles:
    names: set[str] = set()
    arns: set[str] = set()
    entries = unresolved = 0
    for entry in stack.of_type(ACCESS_ENTRY):
        kind = entry.prop("type")
        if kind is UNKNOWN:
            unresolved += 1
            continue
        if kind not in NODE_ENTRY_TYPES:
            continue
        entries += 1
        principal = entry.prop("principalArn")
        if isinstance(principal, str):
            arns.add(principal)
            names.add(role_name_from_arn(principal))
            continue
        roles = [r for r in stack.sources(entry, "principalArn") if r.type == IAM_ROLE and isinstance(r.prop("name"), str)]
        if roles:
            names.update(r.prop("name") for r in roles)
        else:
            unresolved += 1
    ec2_roles = frozenset(r.prop("name") for r in stack.of_type(IAM_ROLE)
                          if isinstance(r.prop("name"), str) and _trusts_ec2(r))
    return NodeRoles(frozenset(names), frozenset(arns), entries, unresolved, ec2_roles)


# --- policies ----------------------------------------------------------------------------------

def _wildcard_action(action: Any) -> bool:
    return isinstance(action, str) and (action.strip() == "*" or action.strip().endswith(":*"))


@policy(
    "iam-no-wildcard-action",
    """No Allow statement in any IAM or queue policy grants "*" or "<service>:*" (or uses
    NotAction): the controller runs in-cluster with a long-lived identity, and a wildcard there
    turns any controller compromise into account compromise. Deny statements may use wildcards.""",
    group="IAM",
)
def no_wildcard_action(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for doc in documents(stack):
        for index, statement in enumerate(statements(doc.document)):
            if not _allows(statement):
                continue
            where = f"{doc.resource.label} {doc.field} statement {statement.get('Sid') or index}"
            wild = [a for a in as_list(statement.get("Action")) if _wildcard_action(a)]
            if wild:
                yield Violation(doc.resource.urn, f"{where} allows {', '.join(map(str, wild))}; list the actions it needs")
            if "NotAction" in statement:
                yield Violation(doc.resource.urn, f"{where} allows everything except NotAction; list the actions it needs")


def _covers_passrole(action: Any) -> bool:
    return isinstance(action, str) and fnmatch.fnmatchcase("iam:passrole", action.strip().lower())


@policy(
    "iam-passrole-node-role-only",
    """iam:PassRole may be allowed only on the node role (the one with the EC2_LINUX access entry):
    PassRole on anything else lets the controller launch instances with a more powerful role
    than the nodes are meant to have, an easy privilege escalation.""",
    group="IAM",
)
def passrole_node_role_only(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    roles = node_roles(stack)
    for doc in documents(stack):
        for index, statement in enumerate(statements(doc.document)):
            if not _allows(statement) or not any(_covers_passrole(a) for a in as_list(statement.get("Action"))):
                continue
            where = f"{doc.resource.label} {doc.field} statement {statement.get('Sid') or index}"
            if "NotResource" in statement:
                yield Violation(doc.resource.urn, f"{where} allows iam:PassRole with NotResource; name the node role")
                continue
            resources = as_list(statement.get("Resource"))
            if not resources:
                yield Violation(doc.resource.urn, f"{where} allows iam:PassRole without a Resource")
            for arn in resources:
                if not isinstance(arn, str):
                    continue
                if "*" in arn or "?" in arn:
                    yield Violation(doc.resource.urn, f"{where} allows iam:PassRole on {arn}; name the node role's ARN")
                elif not roles.names:
                    continue  # no node role is visible in this stack: cannot judge the ARN
                elif arn not in roles.arns_with_access_entry and role_name_from_arn(arn) not in roles.names:
                    yield Violation(doc.resource.urn, f"{where} allows iam:PassRole on {arn}, which is not the node role "
                                                      f"({', '.join(sorted(roles.names))})")


MAX_CHARACTERS = IntegerSetting("maxCharacters", 6144, "Largest minified document, in characters.")


@policy(
    "iam-document-size",
    """Every IAM policy document stays under the managed-policy limit of 6,144 characters
    (minified JSON): IAM rejects larger documents only at apply time, halfway through an update,
    so it is caught at preview instead.""",
    setting=MAX_CHARACTERS,
    group="IAM",
)
def document_size(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    limit = MAX_CHARACTERS.read(config)
    for doc in documents(stack):
        if doc.error:
            yield Violation(doc.resource.urn, f"{doc.resource.label} {doc.field} is {doc.error}")
            continue
        if doc.document is None or doc.document is UNKNOWN:
            continue
        size = len(json.dumps(doc.document, separators=(",", ":"), ensure_ascii=False))
        if size >= limit:
            yield Violation(doc.resource.urn, f"{doc.resource.label} {doc.field} is {size} characters minified "
                                              f"(limit {limit}); split it into several policies")
