"""The Makefile's commands through `make` itself, in a temporary copy of the project: GNU make exits
2 whenever a recipe fails, so each recipe names the command's own documented exit code on stderr,
and keeps make's command echo off stdout (what `make pr-report > report.md` captures)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import PROJECT_DIR

COPIED = ("Makefile", "Pulumi.yaml", "__main__.py", "kubefacts", "components", "offline", "policies", "provisioner", "stacks",
          "examples")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = tmp_path / "project"
    root.mkdir()
    for name in COPIED:
        source = PROJECT_DIR / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "build"))
        else:
            shutil.copy(source, root / name)
    (root / ".venv").symlink_to((PROJECT_DIR / ".venv").resolve())
    shutil.copy(PROJECT_DIR / "requirements.txt", root / "requirements.txt")
    return root


def make(root: Path, *args: str) -> subprocess.CompletedProcess:
    # -o: the copy's requirements.txt is newer than the venv's stamp; never reinstall from a test.
    # As a user runs it: not under `make test`'s own make, whose MAKELEVEL would add
    # "Entering directory" lines to stdout.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(["make", "-o", ".venv/.installed", *args], cwd=root, capture_output=True, text=True,
                          timeout=300, env=env)


def test_make_render_of_an_invalid_stack_names_exit_2_and_echoes_nothing_on_stdout(project):
    web = project / "stacks" / "teams" / "web.yaml"
    web.write_text(web.read_text().replace('frontend: {limits: {cpu: "40"', 'frontend: {limits: {cpu: "-10"'))
    done = make(project, "render", "STACK=dev")
    assert done.returncode == 2
    assert "make render: .venv/bin/python -m offline.render dev exited 2 (make itself exits 2 on any failure)" in done.stderr
    assert "-m offline.render" not in done.stdout


def test_make_render_names_the_policy_packs_exit_3(project):
    """A dev pool over the dev cpu ceiling (128): nodepool-limits-within-ceiling is mandatory in dev."""
    web = project / "stacks" / "teams" / "web.yaml"
    web.write_text(web.read_text().replace('frontend: {limits: {cpu: "40", memory: 160Gi}}',
                                           'frontend: {limits: {cpu: "200", memory: 160Gi}}'))
    done = make(project, "render", "STACK=dev")
    assert done.returncode == 2
    assert "-m policies.check build/dev exited 3" in done.stderr
    assert not done.stdout.startswith(".venv/bin/python")


def test_make_upgrade_plan_stdout_is_the_plan_only(project):
    done = make(project, "upgrade-plan", "STACK=prod", "TO=v1.12.2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Karpenter 1.14.1 -> 1.12.2\n")


def test_make_pr_report_failure_leaves_stdout_empty(project):
    """The report goes to stdout (`> report.md`): make's echo of the command must not."""
    done = make(project, "pr-report", "STACK=dev", "BASE=no-such-ref")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "make pr-report: .venv/bin/python -m offline.pr_report dev --base no-such-ref" in done.stderr


def test_make_render_dev_fails_on_an_invalid_base_value_that_dev_overrides(project):
    """web's frontend limits are overridden in dev; an invalid base (what staging renders) must
    still fail the dev render, and a typo inside environments.prod too."""
    web = project / "stacks" / "teams" / "web.yaml"
    text = web.read_text().replace('limits: {cpu: "200", memory: 800Gi}', 'limits: {cpu: "-10", memory: 800Gi}')
    web.write_text(text.replace('      api: {limits: {cpu: "400"', '      api: {limts: {cpu: "400"'))
    done = make(project, "render", "STACK=dev")
    assert done.returncode == 2
    assert "error: stacks/teams/web.yaml: nodePools[0].limits.cpu: '-10' is negative" in done.stderr
    assert "error: stacks/teams/web.yaml: environments.prod.nodePools.api.limts: unknown key 'limts'" in done.stderr
    assert not (project / "build").exists()
