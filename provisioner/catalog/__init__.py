"""The EC2 catalog: shipped offline facts, a `--catalog` JSON file, or live AWS (catalog.aws)."""
from __future__ import annotations

from importlib import resources
import json

from ..errors import InputError
from kubefacts.yamlread import Limits, UnsafeInput, read_text
from .facts import (DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, Catalog, TypeFacts,
                    catalog_from_dict)
from .overlay import apply_overlays

SHIPPED = "data/ec2-instance-types.json"
EXTENDED = "data/ec2-extended-resources.json"
_shipped: Catalog | None = None


def shipped_catalog() -> Catalog:
    """The catalog shipped in the package (a copy of shared/data/ec2-instance-types.json), with the
    extended resources and labels of data/ec2-extended-resources.json (see catalog/extended.py)."""
    global _shipped
    if _shipped is None:
        text = resources.files("provisioner").joinpath(SHIPPED).read_text(encoding="utf-8")
        data = json.loads(text)
        extra = json.loads(resources.files("provisioner").joinpath(EXTENDED).read_text(encoding="utf-8"))["types"]
        for item in data["instance_types"]:  # the shared file stays verbatim; its gaps are filled here
            facts = extra.get(item["name"])
            if facts:
                item.setdefault("extended_resources", facts["resources"])
                item.setdefault("labels", facts["labels"])
        _shipped = catalog_from_dict(data, origin=f"provisioner/{SHIPPED}")
    return _shipped


def load_catalog_file(path: str) -> Catalog:
    """A JSON file in the shared catalog format; types may carry `offerings` that replace the generated ones."""
    try:
        data = json.loads(read_text(path, path, Limits(max_bytes=64 * 2**20)))
    except UnsafeInput as exc:
        message = "catalog file not found" if exc.message == "file not found" else exc.message
        raise InputError(message, origin=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", origin=path) from None
    return catalog_from_dict(data, origin=path)


__all__ = ["Catalog", "TypeFacts", "catalog_from_dict", "shipped_catalog", "load_catalog_file",
           "apply_overlays", "DEFAULT_REGION", "DEFAULT_ZONES", "DEFAULT_SPOT_DISCOUNT"]
