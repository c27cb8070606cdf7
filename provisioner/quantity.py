"""Kubernetes resource quantities as exact integers.

Every quantity is held in milli-units (cpu: millicores, memory: millibytes) so that one integer
type covers all resources and comparisons are exact, as they are for resource.Quantity.
"""
from fractions import Fraction
import math
import re

_SUFFIX = {
    "": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_cache: dict = {}


def parse(value) -> int:
    """Parse a quantity ("100m", "1.5Gi", 2, "1e3") to milli-units, rounding up like Quantity.Value()."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    cached = _cache.get(value)
    if cached is not None:
        return cached
    if isinstance(value, int):
        result = value * 1000
    elif isinstance(value, float):
        result = math.ceil(Fraction(value) * 1000)
    else:
        text = str(value).strip()
        match = _RE.match(text)
        if not match:
            raise ValueError(f"invalid quantity {value!r}")
        number, exponent, suffix = match.groups()
        amount = Fraction(number)
        amount *= Fraction(10) ** int(exponent[1:]) if exponent else _SUFFIX[suffix or ""]
        result = math.ceil(amount * 1000)
    if len(_cache) < 4096:
        _cache[value] = result
    return result


def mib(n: int) -> int:
    return n * 2**20 * 1000


def gib(n) -> int:
    return int(n * 2**30 * 1000)


def format_quantity(name: str, milli: int) -> str:
    """Render milli-units back to the shortest exact Kubernetes quantity string."""
    if name == "cpu" or milli % 1000:
        if milli % 1000:
            return f"{milli}m"
        return str(milli // 1000)
    units = milli // 1000
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units and units % factor == 0:
                return f"{units // factor}{suffix}"
    return str(units)


def format_resources(resources: dict) -> dict:
    return {name: format_quantity(name, value) for name, value in sorted(resources.items()) if value}
