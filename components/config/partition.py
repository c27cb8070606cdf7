"""The AWS partition a region belongs to, and the ARNs in a stack's config that name another one.

A `cn-*` or `us-gov-*` cluster cannot use an `arn:aws:...` role, boundary, key or policy: IAM
refuses it at `pulumi up`, long after the offline render passed. Mirrors the partition table of
the AWS SDKs (aws-sdk-go-v2 internal/endpoints/awsrulesfn/partitions.json: regionRegex per partition).
"""

from __future__ import annotations

from typing import Any, Iterator

# Longest prefix first: `us-isob-` before `us-iso-`.
_PARTITION_BY_PREFIX = (
    ("cn-", "aws-cn"),
    ("us-gov-", "aws-us-gov"),
    ("us-isob-", "aws-iso-b"),
    ("us-iso-", "aws-iso"),
    ("eu-isoe-", "aws-iso-e"),
    ("us-isof-", "aws-iso-f"),
)
PARTITIONS = frozenset({"aws", *(p for _, p in _PARTITION_BY_PREFIX)})


def partition_for_region(region: str) -> str:
    """`cn-north-1` -> `aws-cn`, `us-gov-west-1` -> `aws-us-gov`, any other region -> `aws`."""
    for prefix, partition in _PARTITION_BY_PREFIX:
        if region.startswith(prefix):
            return partition
    return "aws"


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield from _strings(sub, f"{path}.{key}")
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield from _strings(sub, f"{path}[{index}]")


def foreign_arns(values: dict[str, Any], region: str) -> Iterator[tuple[str, str, str]]:
    """`(key path, arn, its partition)` of every ARN under `values` (config key -> value) whose
    partition is not the region's; ARNs with a placeholder or unknown partition are left alone."""
    expected = partition_for_region(region)
    for key, value in values.items():
        for path, text in _strings(value, key):
            parts = text.split(":", 2)
            if len(parts) == 3 and parts[0] == "arn" and parts[1] in PARTITIONS and parts[1] != expected:
                yield path, text, parts[1]
