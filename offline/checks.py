"""Checks over a render: Karpenter objects through the one validator (kubefacts.validation: the
pinned release's CRD schema and CEL rules, Karpenter's runtime checks) and both Karpenter charts' values against its defaults, from the project's data (so they run on
any clone); Odigos values against the upstream chart schema when `../shared/reference/` is there.
The release is the one the render's karpenter helm release pins."""

from __future__ import annotations

from components import helm_values, reference
from components.karpenter import CONTROLLER_CHART, CRD_CHART
from components.odigos import CHART as ODIGOS_CHART
from kubefacts.validation import validate

from .monitor import Capture

RELEASE = "kubernetes:helm.sh/v3:Release"


def available() -> bool:
    """The CRD and chart checks need only the project's data; they always run."""
    return True


def rendered_version(capture: Capture) -> str:
    """The Karpenter release a render pins (its karpenter chart version); the newest when it has none."""
    for release in capture.of_type(RELEASE):
        if release.inputs.get("chart") == CONTROLLER_CHART and release.inputs.get("version"):
            return str(release.inputs["version"])
    return reference.newest()


def check_capture(capture: Capture) -> list[str]:
    """Every problem, as `<object>: <path>: <message>`; empty when the render is valid."""
    version = rendered_version(capture)
    if version not in reference.supported():
        return [f"helm karpenter: version {version} is not supported ({', '.join(reference.supported())})"]
    problems: list[str] = []
    objects = [r.inputs for r in capture.resources if r.type.startswith("kubernetes:") and "kind" in r.inputs]
    for obj in objects:  # the one validator of Karpenter objects: CRD schema, CEL, Karpenter's runtime checks
        problems += [error.words for error in validate(obj, release=version)]
    charts = {CONTROLLER_CHART: "karpenter", CRD_CHART: "karpenter-crd"}
    for release in capture.of_type(RELEASE):
        chart, values = release.inputs.get("chart"), release.inputs.get("values") or {}
        if chart in charts:
            defaults = helm_values.karpenter_defaults(charts[chart], version)
            problems += [f"helm {release.inputs.get('name')}: {p}: not a key of the chart's values (Karpenter {version})"
                         for p in helm_values.unknown_keys(values, defaults, helm_values.free_form(charts[chart]))]
        elif chart == ODIGOS_CHART and helm_values.ODIGOS_SCHEMA.is_file():
            problems += [f"helm {release.inputs.get('name')}: {e}" for e in helm_values.schema_errors(values)]
    return problems
