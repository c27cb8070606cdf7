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
