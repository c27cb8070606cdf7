"""Discovery: which subnets and security groups Karpenter's nodes get."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .model import EC2_TAG, UNKNOWN, Stack, Violation
from .registry import policy

DISCOVERY_TAG = "karpenter.sh/discovery"


@policy(
    "discovery-single-security-group",
    f"""Exactly one security group carries the {DISCOVERY_TAG} tag the stack manages: the AWS
    Load Balancer Controller refuses to pick among several tagged groups on a node, and a second
    group silently widens what Karpenter's nodes can reach. (A stack that tags nothing for
    discovery leaves it to another stack and is not judged.)""",
    group="Discovery",
)
def single_security_group(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    tags = [t for t in stack.of_type(EC2_TAG) if t.prop("key") in (DISCOVERY_TAG, UNKNOWN)]
    if not tags:
        return
    groups: dict[str, str] = {}
    unknown = 0
    for tag in tags:
        key, resource_id = tag.prop("key"), tag.prop("resourceId")
        if key is UNKNOWN or resource_id is UNKNOWN:
            unknown += 1
        elif isinstance(resource_id, str) and resource_id.startswith("sg-"):
            groups.setdefault(resource_id, tag.urn)
    if len(groups) > 1:
        for _group_id, urn in sorted(groups.items())[1:]:
            yield Violation(urn, f"security groups {', '.join(sorted(groups))} all carry {DISCOVERY_TAG}; "
                                 "tag exactly one")
    elif not groups and not unknown:
        yield Violation(tags[0].urn, f"the stack tags subnets with {DISCOVERY_TAG} but no security group; "
                                     "nodes would launch with no security group Karpenter can find")
