"""Kubernetes quantities and Karpenter durations, exactly (Decimal), for comparisons."""

from __future__ import annotations

import re
from decimal import Decimal

from components.config.kube import parse_quantity

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def quantity(value: object) -> Decimal:
    """A quantity ("500m", "16Gi", 4) in base units (cores, bytes); ValueError when malformed.
    The same grammar the config validates with (components.config.kube)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a quantity")
    return parse_quantity(value)


def duration_seconds(value: str) -> int | None:
    """Seconds of a Karpenter duration ("720h", "1h30m", "90s"); None for "Never";
    ValueError when malformed."""
    if value == "Never":
        return None
    match = _DURATION.match(value or "")
    if not value or not match or not any(match.groups()):
        raise ValueError(f"{value!r} is not a duration (e.g. 720h, 30m) or Never")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def show(name: str, value: Decimal) -> str:
    """A readable quantity for messages (memory in Gi when whole)."""
    if name in ("memory", "ephemeral-storage") and value % (2 ** 30) == 0:
        return f"{value / 2 ** 30:f}".rstrip("0").rstrip(".") + "Gi"
    if name in ("memory", "ephemeral-storage") and value >= 2 ** 30:
        return f"{value / 2 ** 30:.1f}Gi"
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
