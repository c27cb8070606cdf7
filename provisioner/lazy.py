"""Names a module loads on first use (PEP 562 module __getattr__), so that importing it stays cheap:
`provisioner` and `provisioner.api` both defer what pulls in numpy, the scheduler or the disruption
passes until a caller asks for it."""
from __future__ import annotations

import importlib
from typing import Any, Mapping


def load(namespace: dict[str, Any], exports: Mapping[str, str], name: str) -> Any:
    """The body of a module's __getattr__: import `name` from the module `exports` maps it to
    (relative to the caller's package), keep it in the caller's globals so the next access is a
    plain lookup, and refuse any other name with the AttributeError Python itself would raise."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, namespace["__package__"]), name)
    namespace[name] = value
    return value
