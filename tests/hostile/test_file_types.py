"""Files that are not regular files: a named pipe read as a stack file, a `-f` input, a catalog or a
build's resources.json blocked the command until a writer came (forever); each is now exit 2
naming the file, and a file name with an ANSI escape is printed escaped. Each case runs in a
subprocess with a timeout, so the old hang fails the test instead of hanging the run."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness import PROJECT_DIR
from tests.hostile.corpus import FILE_TYPE_IDS, file_type_cases


@pytest.mark.parametrize("case_id", FILE_TYPE_IDS)
def test_a_named_pipe_or_an_escaped_name_is_exit_2_naming_the_file(tmp_path, case_id):
    cases = file_type_cases(tmp_path)
    assert [c[0] for c in cases] == list(FILE_TYPE_IDS)
    _, module, argv, expected = next(c for c in cases if c[0] == case_id)
    try:
        done = subprocess.run([sys.executable, "-m", module, *argv], cwd=PROJECT_DIR, capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{module} {' '.join(argv)} hung")
    assert done.returncode == 2, done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "\x1b" not in done.stderr + done.stdout
