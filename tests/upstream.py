"""The upstream facts (Karpenter v1.14.1's getting-started template) with their placeholders filled in.

Read from ../shared/ every time (never copied into the project); tests using it are skipped
where that folder is absent.
"""

from __future__ import annotations

import json
from typing import Any

from tests.harness import shared

REFERENCE = "reference/karpenter/official-iam-and-interruption.json"


def facts() -> dict[str, Any]:
    return json.loads(shared(REFERENCE).read_text())


def substitute(value: Any, values: dict[str, str]) -> Any:
    """`value` with every `${...}` placeholder of `values` replaced, in keys and strings alike."""
    if isinstance(value, str):
        for placeholder, replacement in values.items():
            value = value.replace(placeholder, replacement)
        return value
    if isinstance(value, dict):
        return {substitute(k, values): substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    return value


def placeholders(*, partition: str, region: str, account_id: str, cluster: str, node_role_arn: str,
                 queue_arn: str, url_suffix: str = "amazonaws.com") -> dict[str, str]:
    # The `.Arn` forms first: `${KarpenterInterruptionQueue}` alone would match their prefix.
    return {
        "${KarpenterNodeRole.Arn}": node_role_arn,
        "${KarpenterInterruptionQueue.Arn}": queue_arn,
        "${AWS::Partition}": partition,
        "${AWS::Region}": region,
        "${AWS::AccountId}": account_id,
        "${AWS::URLSuffix}": url_suffix,
        "${ClusterName}": cluster,
    }


def controller_policies(values: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Upstream's controller policies by key (`NodeLifecycle`, ...), placeholders substituted."""
    return {p["logicalId"].removesuffix("Policy"): substitute(p, values) for p in facts()["controllerPolicies"]}


STATEMENT_FIELDS = ("Sid", "Effect", "Action", "Resource", "Condition")
