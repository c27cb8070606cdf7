"""Kubernetes resource quantities as exact integers.

Every quantity is held in milli-units (cpu: millicores, memory: millibytes) so that one integer
type covers all resources and comparisons are exact, as they are for resource.Quantity.
"""
from fractions import Fraction
import math
import re

from .memo import remember

_SUFFIX = {
    "": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_RE = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
_cache: dict = {}
# Bounds: the scheduling core holds requests and capacities in int64 arrays, where a node's usage
# plus one more request must still fit: REQUEST_MAX_MILLI (10^18 milli-units, 10^15 cores or about
# 888 TiB) is far beyond any instance, so cpu "1e18" is refused, never overflowed. NodePool limits
# are only compared (and clamped before numpy), so they may reach MAX_MILLI.
REQUEST_MAX_MILLI = 10**18
MAX_MILLI = 10**27
MAX_EXPONENT = 30
MAX_TEXT = 64
# Go's time.Duration is int64 nanoseconds: time.ParseDuration (what Karpenter reads expireAfter,
# consolidateAfter, terminationGracePeriod and budget durations with) refuses anything longer.
# Shared by components/config/kube.py and the provisioner's duration readers.
MAX_DURATION_NS = 2**63 - 1
MAX_DURATION_TEXT = "2562047h47m16.854775807s"


def parse(value) -> int:
    """Parse a quantity ("100m", "1.5Gi", 2, "1e3") to milli-units, rounding up like Quantity.Value().
    ValueError for anything malformed, non-finite or beyond ±MAX_MILLI (exponents are bounded before
    any arithmetic, so "1e99999999" costs nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"invalid quantity {value!r}")
    cached = _cache.get(value)
    if cached is not None:
        return cached
    if isinstance(value, int):
        result = value * 1000 if abs(value) <= MAX_MILLI else MAX_MILLI + 1
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: not a finite number")
        result = math.ceil(Fraction(value) * 1000) if abs(value) <= MAX_MILLI else MAX_MILLI + 1
    else:
        text = value
        match = _RE.fullmatch(text) if len(text) <= MAX_TEXT else None
        if not match:
            raise ValueError(f"invalid quantity {value[:MAX_TEXT]!r}")
        number, exponent, suffix = match.groups()
        amount = Fraction(number)
        if exponent:
            power = int(exponent[1:])
            if abs(power) > MAX_EXPONENT:
                raise ValueError(f"invalid quantity {value!r}: exponent out of range (at most {MAX_EXPONENT})")
            amount *= Fraction(10) ** power
        else:
            amount *= _SUFFIX[suffix or ""]
        result = math.ceil(amount * 1000)
    if abs(result) > MAX_MILLI:
        raise ValueError(f"quantity {str(value)[:MAX_TEXT]!r} is too large (at most 10^24 units)")
    if len(_cache) < 4096:
        _cache[value] = result
    return result


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


def format_common(name: str, millis: list) -> list:
    """Quantities of one resource in one unit, the largest that writes every one of them exactly
    (a table column reads `3000m/3920m`, never `3/3920m`; `6016Mi/6584Mi`, never `5Gi/6584Mi`)."""
    if name == "cpu" or any(m % 1000 for m in millis):
        if any(m % 1000 for m in millis):
            return [f"{m}m" for m in millis]
        return [str(m // 1000) for m in millis]
    units = [m // 1000 for m in millis]
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if any(units) and all(u % factor == 0 for u in units):
                return [f"{u // factor}{suffix}" for u in units]
    return [str(u) for u in units]


_formatted: dict = {}


def format_resources(resources: dict) -> dict:
    """{name: quantity string} sorted by name, zero amounts left out. Memoised: a plan's 4,000
    NodeClaims have a few dozen distinct request and allocatable maps between them."""
    key = tuple(resources.items())
    cached = _formatted.get(key)
    if cached is None:
        cached = remember(_formatted, key,
                          {name: format_quantity(name, value) for name, value in sorted(resources.items()) if value})
    return dict(cached)
