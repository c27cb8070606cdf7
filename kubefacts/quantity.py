"""Kubernetes resource quantities: one grammar, two exact views.

The grammar is resource.Quantity's (k8s.io/apimachinery/pkg/api/resource/quantity.go,
`ParseQuantity`): a signed decimal number with an optional binary suffix (Ki..Ei), decimal suffix
(n, u, m, k, M..E) or decimal exponent (e3, E-2). Two views of the same parse:

- `decimal(value)`: base units (cores, bytes) as a Decimal, for the config and the policy pack;
  below 2^63 (`Quantity.Value()` is an int64, larger values cannot be compared by the controllers);
- `milli(value)`: milli-units (millicores, millibytes) as an int, rounded up like
  `Quantity.MilliValue()`, for the scheduling core; within ±MAX_MILLI. NodePool limits may reach
  MAX_MILLI; requests and capacities stay below REQUEST_MAX_MILLI (10^18 milli-units, 10^15 cores
  or about 888 TiB: a node's usage plus one more request must still fit the core's int64 arrays).

Exponents are bounded before any arithmetic, so "1e99999999" costs nothing.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import re2  # Go RE2: `\d` and `$` mean what they mean to the API server

_GRAMMAR = re2.compile(r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SCALE = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

MAX_TEXT = 100
"""Longest quantity text read; anything longer is refused without matching."""
MAX_EXPONENT = 30
MAX_QUANTITY = Decimal(2**63)
"""`decimal()` refuses |value| >= 2^63 base units (Quantity.Value() is an int64)."""
MAX_MILLI = 10**27
"""`milli()` refuses |value| > 10^27 milli-units (10^24 units)."""
REQUEST_MAX_MILLI = 10**18
"""Largest request or capacity the scheduling core takes (checked by its reader, not here)."""
EXAMPLES = "e.g. 500m, 4, 16Gi"


def _refuse(value: object) -> ValueError:
    text = str(value)
    shown = text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."
    return ValueError(f"{shown!r} is not a Kubernetes quantity ({EXAMPLES})")


def _parts(value: object) -> tuple[str, int, int]:
    """(number text, power of ten, power of two) of a quantity; ValueError when malformed."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _refuse(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity: not a finite number")
    # YAML reads `cpu: 100` as an int; Kubernetes treats it as the quantity "100".
    text = value if isinstance(value, str) else repr(value)
    match = _GRAMMAR.fullmatch(text) if len(text) <= MAX_TEXT else None
    if not match:
        raise _refuse(value)
    exponent_text, suffix = match["exp"], match["suffix"] or ""
    if exponent_text:
        exponent = int(exponent_text[1:])
        if abs(exponent) > MAX_EXPONENT:  # 1e9999999 would overflow Decimal (and means nothing)
            raise ValueError(f"{text!r}: exponent {exponent} is out of range (at most {MAX_EXPONENT})")
        return match["num"], exponent, 0
    if suffix in _BINARY:
        return match["num"], 0, _BINARY[suffix].bit_length() - 1
    return match["num"], _DECIMAL_SCALE[suffix], 0


def decimal(value: str | int | float) -> Decimal:
    """A quantity in base units (cores for CPU, bytes for memory), exactly as written."""
    number, ten, two = _parts(value)
    scaled = Decimal(number) * (Decimal(2) ** two) * (Decimal(10) ** ten)
    if abs(scaled) >= MAX_QUANTITY:
        raise ValueError(f"{str(value)!r} is too large: quantities must stay below 2^63 "
                         "(Quantity.Value() is an int64)")
    return scaled


_milli_cache: dict[object, int] = {}


def milli(value: str | int | float) -> int:
    """A quantity in milli-units, rounded up like Quantity.MilliValue(); bounded by ±MAX_MILLI."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _refuse(value)
    cached = _milli_cache.get(value)
    if cached is not None:
        return cached
    if isinstance(value, int):
        result = value * 1000 if abs(value) <= MAX_MILLI else MAX_MILLI + 1
    elif isinstance(value, float) and math.isfinite(value):
        result = math.ceil(Fraction(value) * 1000) if abs(value) <= MAX_MILLI else MAX_MILLI + 1
    else:
        number, ten, two = _parts(value)
        result = math.ceil(Fraction(number) * 2**two * Fraction(10) ** ten * 1000)
    if abs(result) > MAX_MILLI:
        raise ValueError(f"{str(value)[:64]!r} is too large: quantities here stay within 10^24 units")
    if len(_milli_cache) >= 4096:  # bounded without LRU bookkeeping on every hit
        _milli_cache.clear()
    _milli_cache[value] = result
    return result


def mib(n: int) -> int:
    """n MiB in milli-units."""
    return n * 2**20 * 1000


def gib(n: float) -> int:
    """n GiB in milli-units."""
    return int(n * 2**30 * 1000)


def format_quantity(name: str, amount: int) -> str:
    """Milli-units of resource `name` back to the shortest exact quantity text ("1500m", "16Gi")."""
    if name == "cpu" or amount % 1000:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    units = amount // 1000
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units and units % factor == 0:
                return f"{units // factor}{suffix}"
    return str(units)


def show(name: str, value: Decimal) -> str:
    """Base units of resource `name` readably, for messages (memory in Gi when whole)."""
    if name in ("memory", "ephemeral-storage") and value % (2 ** 30) == 0:
        return f"{value / 2 ** 30:f}".rstrip("0").rstrip(".") + "Gi"
    if name in ("memory", "ephemeral-storage") and value >= 2 ** 30:
        return f"{value / 2 ** 30:.1f}Gi"
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def counted_in_whole_units(name: str) -> bool:
    """Kubernetes' IsIntegerResourceName for resource lists (k8s.io/kubernetes pkg/apis/core/helper
    IsExtendedResourceName): a resource with a domain outside kubernetes.io (`nvidia.com/gpu`) and
    not a quota's `requests.` name. ValidateResourceQuantityValue refuses a fraction of one ("must
    be an integer"): no device can be half given to a pod."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def whole_units_problem(name: str, milli: int) -> str | None:
    """Why the API server would refuse this amount (milli-units) of `name`, or None."""
    if milli % 1000 and counted_in_whole_units(name):
        return f"must be an integer: {name} is an extended resource, counted in whole units"
    return None


__all__ = [
    "EXAMPLES",
    "MAX_EXPONENT",
    "MAX_MILLI",
    "MAX_QUANTITY",
    "MAX_TEXT",
    "REQUEST_MAX_MILLI",
    "counted_in_whole_units",
    "decimal",
    "format_quantity",
    "gib",
    "mib",
    "milli",
    "show",
    "whole_units_problem",
]
