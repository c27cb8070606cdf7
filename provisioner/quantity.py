"""Resource maps as quantity text, for reports (the parsing and the single-quantity format live in
kubefacts.quantity)."""
from kubefacts.quantity import format_quantity

from .memo import remember

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
