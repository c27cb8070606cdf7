"""The offline render writes the same bytes on every run of one commit: two processes with different
string hash seeds (PYTHONHASHSEED) write identical build folders, policy report included."""

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import PROJECT_DIR, STACKS

SEEDS = ("1", "2")


def run_module(seed: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=PROJECT_DIR, env={**os.environ, "PYTHONHASHSEED": seed},
                          capture_output=True, text=True, check=False)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def first_difference(one: dict[str, bytes], other: dict[str, bytes]) -> str:
    """The first file that differs, as a short unified diff (what the assertion shows)."""
    for name in sorted(one.keys() | other.keys()):
        if one.get(name) != other.get(name):
            diff = difflib.unified_diff(one.get(name, b"").decode().splitlines(), other.get(name, b"").decode().splitlines(),
                                        f"seed {SEEDS[0]}: {name}", f"seed {SEEDS[1]}: {name}", lineterm="", n=1)
            return "\n".join(list(diff)[:40])
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_render_and_policy_check_write_the_same_bytes_whatever_the_hash_seed(stack, tmp_path):
    builds = []
    for seed in SEEDS:
        out = tmp_path / seed / stack
        rendered = run_module(seed, "offline.render", stack, "--out", str(out))
        assert rendered.returncode == 0, rendered.stderr
        checked = run_module(seed, "policies.check", str(out))
        assert checked.returncode == 0, checked.stderr
        builds.append(folder_bytes(out))
    assert {"resources.json", "outputs.json", "cost.json", "policy-report.json"} <= builds[0].keys()
    assert builds[0] == builds[1], first_difference(*builds)
