"""Run the program or one component under the mock monitor, in one line per test.

    capture = render("dev")                       # the real __main__.py, stack dev (cached)
    capture = run_component(lambda: Foo("x", cfg)) # one component
    cfg = platform_from(settings={...}, teams={"web": {...}})  # a PlatformConfig from dicts
"""

from __future__ import annotations

import copy
import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from components.config import PlatformConfig
from components.platform import load_platform
from offline.monitor import Capture, run
from offline.placeholders import PlaceholderMocks
from offline.render import render_stack

PROJECT_DIR = Path(__file__).resolve().parents[1]
# KARPENTER_PLATFORM_SHARED points elsewhere when the checkout is not beside ../shared (worktrees).
SHARED_DIR = Path(os.environ.get("KARPENTER_PLATFORM_SHARED") or PROJECT_DIR.parent / "shared")
STACKS = ("dev", "staging", "prod")


def shared(relative: str) -> Path:
    """A file of ../shared/; the test is skipped (with the reason) where the folder is absent."""
    path = SHARED_DIR / relative
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/ is only beside the repository in CI and dev sessions)")
    return path


@functools.lru_cache(maxsize=None)
def _render(stack: str) -> Capture:
    return render_stack(PROJECT_DIR, stack)


def render(stack: str) -> Capture:
    """The whole program for a shipped stack (cached: treat the result as read-only)."""
    return _render(stack)


def run_component(program: Callable[[], Any], region: str = "us-east-1", stack: str = "test",
                  config: dict[str, str] | None = None) -> Capture:
    """Declare one component (or a few) under mocks and capture what it declared."""
    return run(program, PlaceholderMocks(region), stack=stack, config=config)


MINIMAL_SETTINGS: dict[str, Any] = {
    "cluster": {"name": "test-cluster", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}},
    "teams": [],
}
MINIMAL_POOL: dict[str, Any] = {"name": "pool", "limits": {"cpu": "10", "memory": "40Gi"}}


def write_project(root: Path, settings: dict[str, Any], teams: dict[str, Any], stack: str = "test",
                  raw_files: dict[str, str] | None = None) -> Path:
    """A throwaway project folder with Pulumi.yaml, one stack file and team files."""
    (root / "stacks" / "teams").mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    config = {f"karpenter-platform:{key}": value for key, value in settings.items()}
    (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    for name, team in teams.items():
        (root / "stacks" / "teams" / f"{name}.yaml").write_text(yaml.safe_dump(team) if not isinstance(team, str) else team)
    for relative, text in (raw_files or {}).items():
        (root / relative).write_text(text)
    return root


def platform_from(settings: dict[str, Any] | None = None, teams: dict[str, Any] | None = None,
                  stack: str = "test", other_stacks: tuple[str, ...] = ()) -> PlatformConfig:
    """A validated PlatformConfig from dicts (MINIMAL_SETTINGS merged with `settings`); `other_stacks`
    get the same stack file, so team files may name them under `environments` and `budget`."""
    merged = copy.deepcopy(MINIMAL_SETTINGS)
    merged.update(settings or {})
    teams = teams or {}
    merged.setdefault("teams", [])
    if not merged["teams"]:
        merged["teams"] = sorted(teams)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_project(Path(tmp), merged, teams, stack)
        for other in other_stacks:
            (root / "stacks" / f"Pulumi.{other}.yaml").write_text((root / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        return load_platform(root, stack)


def stack_platform(stack: str) -> PlatformConfig:
    return load_platform(PROJECT_DIR, stack)


def manifests(capture: Capture, kind: str) -> list[dict[str, Any]]:
    """The Kubernetes objects of one kind a capture declared, as applied."""
    return [r.inputs for r in capture.resources if r.type.startswith("kubernetes:") and r.inputs.get("kind") == kind]


def policy_document(capture: Capture, name: str, field: str = "policy") -> dict[str, Any]:
    return json.loads(capture.named(name).inputs[field])
