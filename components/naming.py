"""Physical names derived from the cluster name, kept within AWS length limits.

EKS allows 100-character cluster names, but IAM role names stop at 64, SQS queue names at 80
and EventBridge rule names at 64. Names that fit are used verbatim (as upstream names them);
longer ones keep a readable head of the cluster name plus a hash of the whole name, so two
long cluster names that share a prefix still get distinct, stable names.
"""

from __future__ import annotations

import hashlib

IAM_ROLE_NAME_MAX = 64
IAM_POLICY_NAME_MAX = 128
IAM_INSTANCE_PROFILE_NAME_MAX = 128
SQS_QUEUE_NAME_MAX = 80
EVENT_RULE_NAME_MAX = 64

_HASH_LENGTH = 8


def shorten(core: str, room: int) -> str:
    """`core` itself when it fits in `room` characters, else its head, '-' and an 8-hex hash of all of it."""
    if len(core) <= room:
        return core
    if room < _HASH_LENGTH + 2:  # a head of at least one character keeps the name readable
        raise ValueError(f"no room to shorten {core!r} into {room} characters")
    digest = hashlib.sha256(core.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{core[: room - _HASH_LENGTH - 1]}-{digest}"


def scoped(cluster: str, limit: int, *, prefix: str = "", suffix: str = "") -> str:
    """`<prefix><cluster><suffix>` within `limit`: only the cluster part is shortened, so the fixed
    part that says what the resource is (e.g. `-spot-interruption`) always survives."""
    return f"{prefix}{shorten(cluster, limit - len(prefix) - len(suffix))}{suffix}"
