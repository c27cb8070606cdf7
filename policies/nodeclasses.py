"""EC2NodeClass policies: how every node Karpenter launches is built."""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

from .iam import node_roles
from .model import NODECLASS, UNKNOWN, Resource, Stack, Violation, contains_unknown
from .registry import policy

PINNED_ALIAS = re.compile(r"^[a-z0-9]+@v?\d[\w.\-]*$")


def _classes(stack: Stack) -> list[Resource]:
    return stack.of_type(NODECLASS)


def _known_specs(stack: Stack, key: str) -> Iterator[tuple[Resource, Any]]:
    """Each EC2NodeClass with its spec.<key>, passing over those whose value is unknown at preview."""
    for node_class in _classes(stack):
        value = node_class.prop("spec", key)
        if value is not UNKNOWN:
            yield node_class, value


@policy(
    "nodeclass-imdsv2-hop-limit-1",
    """Every EC2NodeClass requires IMDSv2 (httpTokens: required) with httpPutResponseHopLimit 1:
    with IMDSv1 or a hop limit above 1, any pod can read the node role's credentials from the
    instance metadata service.""",
    group="EC2NodeClass",
)
def imdsv2(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for node_class, options in _known_specs(stack, "metadataOptions"):
        if not isinstance(options, Mapping):
            yield Violation(node_class.urn, f"{node_class.label} sets no spec.metadataOptions; set httpTokens: required "
                                            "and httpPutResponseHopLimit: 1 (Karpenter's default hop limit is 1, but say so)")
            continue
        tokens, hops, endpoint = (options.get(k) for k in ("httpTokens", "httpPutResponseHopLimit", "httpEndpoint"))
        if endpoint == "disabled":
            continue  # no metadata service at all: nothing to steal
        if tokens is not UNKNOWN and tokens != "required":
            yield Violation(node_class.urn, f"{node_class.label} metadataOptions.httpTokens is {tokens!r}; IMDSv2 needs 'required'")
        if hops is not UNKNOWN and hops != 1:
            yield Violation(node_class.urn, f"{node_class.label} metadataOptions.httpPutResponseHopLimit is {hops!r}; "
                                            "use 1 so pods cannot reach the node's credentials")


@policy(
    "nodeclass-root-volume-encrypted",
    """Every EC2NodeClass encrypts its root volume (the blockDeviceMapping with rootVolume: true,
    or the first one): container images, emptyDir volumes and logs of every pod land there.""",
    group="EC2NodeClass",
)
def root_volume_encrypted(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for node_class, mappings in _known_specs(stack, "blockDeviceMappings"):
        if not isinstance(mappings, list) or not mappings:
            yield Violation(node_class.urn, f"{node_class.label} declares no blockDeviceMappings, so the root volume "
                                            "takes the AMI's settings; declare it with ebs.encrypted: true")
            continue
        roots = [m for m in mappings if isinstance(m, Mapping) and m.get("rootVolume") is True] or mappings[:1]
        for mapping in roots:
            encrypted = mapping.get("ebs", {}).get("encrypted") if isinstance(mapping.get("ebs"), Mapping) else None
            if encrypted is UNKNOWN:
                continue
            if encrypted is not True:
                yield Violation(node_class.urn, f"{node_class.label} root volume {mapping.get('deviceName', '')} is not "
                                                "encrypted (ebs.encrypted must be true)")


@policy(
    "nodeclass-ami-pinned",
    """Outside dev, every EC2NodeClass pins its AMI (an alias with a version such as
    al2023@v20251117, or an AMI id): with @latest, or a selector by name or tags, every new AMI
    release silently drifts and replaces every node, untested.""",
    group="EC2NodeClass",
)
def ami_pinned(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for node_class in _classes(stack):
        terms = node_class.prop("spec", "amiSelectorTerms")
        if contains_unknown(terms):
            continue
        if not isinstance(terms, list) or not terms:
            yield Violation(node_class.urn, f"{node_class.label} has no amiSelectorTerms; pin an alias such as al2023@v20251117")
            continue
        for term in terms:
            if not isinstance(term, Mapping):
                continue
            alias, ami_id = term.get("alias"), term.get("id")
            if isinstance(ami_id, str) and ami_id.startswith("ami-"):
                continue
            if isinstance(alias, str) and PINNED_ALIAS.match(alias) and not alias.endswith("@latest"):
                continue
            shown = f"alias {alias}" if alias else "a selector by " + ", ".join(sorted(k for k in term if k != "alias"))
            yield Violation(node_class.urn, f"{node_class.label} selects its AMI with {shown}, which floats; "
                                            "pin a version (e.g. al2023@v20251117) or an AMI id")


@policy(
    "nodeclass-role-has-access-entry",
    """Every EC2NodeClass's spec.role is the node role that has the stack's EC2_LINUX access
    entry: a node launched with any other role cannot join the cluster (it boots, costs money,
    and never becomes Ready).""",
    group="EC2NodeClass",
)
def role_has_access_entry(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    roles = node_roles(stack)
    if roles.unresolved_entries:
        return  # an access entry's principal is not known yet
    for node_class, role in _known_specs(stack, "role"):
        if not isinstance(role, str) or not role:
            profile = node_class.prop("spec", "instanceProfile")
            what = f"instanceProfile {profile}" if isinstance(profile, str) else "no role"
            yield Violation(node_class.urn, f"{node_class.label} uses {what}; set spec.role to the node role so the pack "
                                            "(and Karpenter) can tie it to its access entry")
            continue
        if roles.entries == 0:
            if role in roles.ec2_role_names:
                yield Violation(node_class.urn, f"{node_class.label} uses role {role}, which this stack creates without "
                                                "an EC2_LINUX access entry: its nodes could not join the cluster")
            continue  # node role and access managed outside this stack: cannot judge
        if role not in roles.names_with_access_entry:
            yield Violation(node_class.urn, f"{node_class.label} uses role {role}, but the EC2_LINUX access entry is for "
                                            f"{', '.join(sorted(roles.names_with_access_entry))}: its nodes could not join")
