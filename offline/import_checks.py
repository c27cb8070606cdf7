"""What the project's stacks say about an import before it is written: the strictest environment's
ceilings (the limits given to a NodePool that had none), the node class names the stacks already
define, and every finding the policy pack raises on the imported team as each stack would render it.

Read through the config loader (components/config/loader.py) and judged by the policy pack's pure
entry point (policies/engine.py `evaluate`) over the offline render (offline/render.py `render_stack`)."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from components.config.ceilings import ceilings
from components.config.errors import ConfigError
from components.config.imports import IMPORT_LIMITS
from components.config.loader import load_yaml, read_stack_files, stack_file
from components.config.stack import PROJECT
from components.crds import validate_manifests
from kubefacts.quantity import decimal as parse_quantity
from offline.checks import rendered_version
from offline.render import render_stack
from policies.check import resource_from_render
from policies.engine import evaluate
from policies.model import NODECLASS, NODEPOOL, Stack

PROJECT_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class StackView:
    name: str
    environment: str
    node_classes: tuple[str, ...]

    @property
    def file(self) -> str:
        return stack_file(self.name)


def stack_names(project: Path) -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (project / "stacks").glob("Pulumi.*.yaml") if p.is_file())


def read_stacks(project: Path) -> tuple[list[StackView], list[str]]:
    """Each stack's environment and node class names, as the loader reads its files (the render in
    policy_findings validates the whole stack); a warning for each stack file that cannot be read."""
    views, warnings = [], []
    if not stack_names(project):
        warnings.append(f"{project / 'stacks'} holds no Pulumi.<stack>.yaml: no policy check, and the policy pack's "
                        f"default ceilings {IMPORT_LIMITS} for NodePools without limits")
    for name in stack_names(project):
        try:
            raw = read_stack_files(project, name)
        except ConfigError as err:
            warnings.append(f"{stack_file(name)} cannot be read ({err.issues[0]}); its ceilings and node classes are not "
                            "considered")
            continue
        environment = raw.values.get(f"{PROJECT}:environment")
        classes = raw.values.get(f"{PROJECT}:nodeClasses")
        # StackSettings.node_classes defaults to {"default": ...} when the key is absent.
        names = tuple(classes) if isinstance(classes, dict) else ("default",)
        views.append(StackView(name, environment if isinstance(environment, str) and environment else name, names))
    return views, warnings


def strictest_limits(views: Iterable[StackView]) -> dict[str, str]:
    """Per resource of IMPORT_LIMITS, the lowest `nodepool-limits-within-ceiling` ceiling of the
    stacks' environments (components/config/ceilings.py), so that a NodePool given them passes in every one."""
    rows = [ceilings(view.environment) for view in views]
    if not rows:
        return dict(IMPORT_LIMITS)
    return {resource: min((row.get(resource, fallback) for row in rows), key=parse_quantity)
            for resource, fallback in IMPORT_LIMITS.items()}


def name_clashes(views: Iterable[StackView], node_classes: Iterable[str]) -> list[str]:
    views = list(views)
    lines = []
    for name in node_classes:
        files = [view.file for view in views if name in view.node_classes]
        if files:
            lines.append(f"EC2NodeClass {name!r} already exists in {', '.join(files)} ({PROJECT}:nodeClasses.{name}, the "
                         "platform's default class when not set): pasting nodeclasses.yaml there would replace it for every "
                         "team using it. Rename the imported class (its metadata.name and the NodePools' nodeClassRef.name) "
                         "and import again, or leave it out if the stack's class suits these NodePools")
    return lines


def _project_with(project: Path, root: Path, stack: str, team: str, team_doc: dict[str, Any],
                  node_classes: dict[str, Any]) -> None:
    """A copy of the project's files for `stack`, with the imported team and node classes added."""
    (root / "stacks" / "teams").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        # A project folder holding only stacks/ (tests, a scratch copy) is rendered by this program.
        shutil.copy(project / name if (project / name).is_file() else PROJECT_DIR / name, root / name)
    for path in (project / "stacks" / "teams").glob("*.yaml"):
        shutil.copy(path, root / "stacks" / "teams" / path.name)
    # Every stack file: the teams' environment blocks are checked against the stacks that exist.
    for path in (project / "stacks").glob("Pulumi.*.yaml"):
        shutil.copy(path, root / "stacks" / path.name)
    (root / "stacks" / "teams" / f"{team}.yaml").write_text(yaml.safe_dump(team_doc, sort_keys=False))
    document = load_yaml(project / stack_file(stack), stack_file(stack)) or {}
    config = document.setdefault("config", {})
    teams = list(config.get(f"{PROJECT}:teams") or [])
    config[f"{PROJECT}:teams"] = teams + ([team] if team not in teams else [])
    classes = config.get(f"{PROJECT}:nodeClasses") or {"default": {}}
    config[f"{PROJECT}:nodeClasses"] = {**classes, **node_classes}
    (root / stack_file(stack)).write_text(yaml.safe_dump(document, sort_keys=False))


def policy_findings(project: Path, views: Iterable[StackView], team: str, team_doc: dict[str, Any],
                    node_classes: dict[str, Any]) -> list[str]:
    """Every policy finding (and CRD check problem) on the imported NodePools and node classes, per
    stack the team would join."""
    ours = {f"NodePool {team}-{pool['name']}" for pool in team_doc.get("nodePools", [])} | \
           {f"EC2NodeClass {name}" for name in node_classes}
    found: dict[tuple[str, str, str], list[str]] = {}
    lines = []
    with tempfile.TemporaryDirectory(prefix="import-check-") as tmp:
        for view in views:
            root = Path(tmp) / view.name
            _project_with(project, root, view.name, team, team_doc, node_classes)
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    capture = render_stack(root, view.name)
            except ConfigError as err:
                lines += [f"{view.file} with this team would refuse: {issue}" for issue in err.issues]
                continue
            except Exception as err:  # noqa: BLE001 - the check is advice; the import itself stands
                lines.append(f"{view.file} with this team could not be rendered to check policies: {err}")
                continue
            # The render's own CRD check (offline/checks.py), on the imported objects, at the release the stack pins.
            mine = [r.inputs for r in capture.resources if r.type in (NODEPOOL, NODECLASS)
                    and f"{r.inputs.get('kind')} {(r.inputs.get('metadata') or {}).get('name')}" in ours]
            for name, violations in validate_manifests(mine, version=rendered_version(capture)).items():
                lines += [f"{view.file}: CRD check: {name}: {violation}" for violation in violations]
            stack = Stack(view.environment, tuple(resource_from_render(r.to_json()) for r in capture.resources))
            for finding in evaluate(stack):
                if finding.label in ours:
                    found.setdefault((finding.policy, finding.label, finding.message), []).append(
                        f"{finding.level} in {view.environment}")
    for (policy, label, message), where in found.items():
        lines.append(f"policy {policy} ({', '.join(where)}): {label}: {message}")
    return lines
