"""Upstream checks over a render: Karpenter objects against the CRDs (schema and CEL), helm
values against the charts' defaults or schema. They need `../shared/reference/` (not part of
the project), so they run here and in tests, never in `pulumi up`."""

from __future__ import annotations

from components import crds, helm_values
from components.karpenter import CONTROLLER_CHART, CRD_CHART
from components.odigos import CHART as ODIGOS_CHART

from .monitor import Capture

RELEASE = "kubernetes:helm.sh/v3:Release"


def available() -> bool:
    return crds.CRD_DIR.is_dir() and helm_values.KARPENTER_DEFAULTS.is_file() and helm_values.ODIGOS_SCHEMA.is_file()


def check_capture(capture: Capture) -> list[str]:
    """Every problem, as `<object>: <path>: <message>`; empty when the render is valid."""
    problems: list[str] = []
    objects = [r.inputs for r in capture.resources if r.type.startswith("kubernetes:") and "kind" in r.inputs]
    for name, violations in crds.validate_manifests(objects).items():
        problems += [f"{name}: {v}" for v in violations]
    defaults = {CONTROLLER_CHART: (helm_values.KARPENTER_DEFAULTS, helm_values.KARPENTER_FREE_FORM),
                CRD_CHART: (helm_values.KARPENTER_CRD_DEFAULTS, ())}
    for release in capture.of_type(RELEASE):
        chart, values = release.inputs.get("chart"), release.inputs.get("values") or {}
        if chart in defaults:
            path, free = defaults[chart]
            problems += [f"helm {release.inputs.get('name')}: {p}: not a key of the chart's values"
                         for p in helm_values.unknown_keys(values, helm_values.load_defaults(path), free)]
        elif chart == ODIGOS_CHART:
            problems += [f"helm {release.inputs.get('name')}: {e}" for e in helm_values.schema_errors(values)]
    return problems
