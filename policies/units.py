"""Kubernetes quantities and Karpenter durations, exactly (Decimal), for comparisons."""

from __future__ import annotations

import re
from decimal import Decimal

_QUANTITY = re.compile(r"^(?P<num>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_FACTORS = {
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60, "n": Decimal("1e-9"), "u": Decimal("1e-6"),
    "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
}
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def quantity(value: object) -> Decimal:
    """A quantity ("500m", "16Gi", 4) in base units (cores, bytes); ValueError when malformed."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a quantity")
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = Decimal(match["num"]), match["suffix"] or ""
    if suffix in _FACTORS:
        return number * _FACTORS[suffix]
    return number * (Decimal(10) ** int(suffix[1:]))


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
