"""`provisioner COMMAND -o json | head -1`: a reader that leaves early ends the command quietly
(exit 141, 128 + SIGPIPE, as a shell reports it), never with a BrokenPipeError traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.harness import PROJECT_DIR

EXAMPLES = PROJECT_DIR / "examples"


@pytest.mark.parametrize("args", [
    ["consolidate", "-f", str(EXAMPLES / "snapshots" / "small-cluster.yaml"), "-o", "json"],
    ["drift", "--before", str(EXAMPLES / "snapshots" / "small-cluster.yaml"),
     "--after", str(EXAMPLES / "snapshots" / "small-cluster.yaml"), "-o", "json"],
    ["simulate", "-f", str(EXAMPLES / "workloads" / "web.yaml"), "-o", "json"],
])
def test_closed_stdout_ends_the_command_without_a_traceback(args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte is written
    try:
        result = subprocess.run([sys.executable, "-m", "provisioner", *args], stdout=write, stderr=subprocess.PIPE,
                                text=True, cwd=PROJECT_DIR, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    assert result.returncode == 141, result.stderr
