"""Chart values key check: every key we generate must exist in the chart's default values.

The karpenter charts ship no values schema, so helm ignores a misspelt key silently (e.g.
`settings.featureGate.nodeOverlay` would leave NodeOverlay off with no error). The karpenter
charts' defaults are the pinned release's, from the project's generated data
(components/reference/), so the check runs wherever the program runs (a key the pinned release
lacks is refused when the config is loaded, components/versions.py). The Odigos schema
is upstream data in `../shared/reference/`, checked in tests and the offline render.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from . import reference

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "shared" / "reference"

# Subtrees whose children are the user's or Kubernetes' own keys (maps and Kubernetes
# types), not chart settings. Empty-map defaults (annotations, podLabels, resources, ...) are
# free-form without being listed; non-empty ones must be listed here.
KARPENTER_FREE_FORM = frozenset({"nodeSelector", "affinity", "podSecurityContext", "strategy"})


class UnknownValuesKey(ValueError):
    """A generated values key the chart does not define."""

    def __init__(self, chart: str, paths: list[str]):
        self.paths = paths
        super().__init__(f"{chart} chart values: unknown key(s) {', '.join(paths)} "
                         "(not in the chart's default values; helm would ignore them silently)")


def load_defaults(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def karpenter_defaults(chart: str, version: str | None = None) -> dict[str, Any]:
    """Default values of chart `karpenter` or `karpenter-crd` in `version` (the newest when None)."""
    return reference.release(version or reference.newest()).chart_defaults(chart)


def free_form(chart: str) -> frozenset[str]:
    return KARPENTER_FREE_FORM if chart == "karpenter" else frozenset()


def first_version_with(chart: str, path: str) -> str | None:
    """The oldest supported release whose `chart` defaults define the dotted key `path`."""
    for version in reference.supported():
        if not unknown_keys(_nested(path), karpenter_defaults(chart, version), free_form(chart)):
            return version
    return None


def _nested(path: str) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nested(rest) if rest else None}


def unknown_keys(values: dict[str, Any], defaults: dict[str, Any], free_form: Iterable[str] = (), prefix: str = "") -> list[str]:
    """Dotted paths of `values` keys absent from `defaults`. A key whose default is an empty map,
    null, a list or a scalar is a leaf: what is under it is not checked."""
    free = set(free_form)
    found = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            found.append(path)
            continue
        default = defaults[key]
        if path in free or not isinstance(default, dict) or not default:
            continue
        if isinstance(value, dict):
            found += unknown_keys(value, default, free, f"{path}.")
    return found


def check_keys(chart: str, values: dict[str, Any], defaults: dict[str, Any], free_form: Iterable[str] = ()) -> None:
    """Raise UnknownValuesKey naming every unknown key path."""
    paths = unknown_keys(values, defaults, free_form)
    if paths:
        raise UnknownValuesKey(chart, paths)


ODIGOS_SCHEMA = REFERENCE_DIR / "odigos" / "values.schema.json"


def schema_errors(values: dict[str, Any], schema_path: Path = ODIGOS_SCHEMA) -> list[str]:
    """Where `values` breaks a chart's values.schema.json (helm runs the same check on install,
    but only then: after everything before the release in the plan has changed)."""
    import json

    import jsonschema

    schema = json.loads(schema_path.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in sorted(validator.iter_errors(values), key=lambda e: list(map(str, e.absolute_path)))]
