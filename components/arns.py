"""ARNs built from partition, account, region and the names the stack computes.

A resource's own `arn` output is known only once the resource exists, so anything built from
it (a policy naming the node role, the queue policy, the access entry's principal) would be
unknown in `pulumi preview`, and the policy pack could not judge it there. Every name here is
one the stack sets itself, so the ARN AWS will give the resource is known in advance; IAM
names a role with the default path `/` as `role/<name>`.
"""

from __future__ import annotations


def iam_role_arn(partition: str, account_id: str, name: str) -> str:
    """A role created without a path: `arn:<partition>:iam::<account>:role/<name>`."""
    return f"arn:{partition}:iam::{account_id}:role/{name}"


def sqs_queue_arn(partition: str, region: str, account_id: str, name: str) -> str:
    return f"arn:{partition}:sqs:{region}:{account_id}:{name}"


def partition_of(arn: str) -> str:
    """`arn:aws-cn:eks:...` -> `aws-cn`."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn" or not parts[1]:
        raise ValueError(f"{arn!r} is not an ARN")
    return parts[1]
