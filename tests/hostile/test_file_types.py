"""Files that are not regular files: a named pipe read as a stack file, a `-f` input, a catalog or a
build's resources.json blocked the command until a writer came (forever); each is now exit 2
naming the file, and a file name with an ANSI escape is printed escaped. Each case runs in a
subprocess with a timeout, so the old hang fails the test instead of hanging the run."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubefacts.errors import shown
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


@given(st.text())
def test_shown_leaves_no_control_format_or_undecodable_character(name):
    import unicodedata

    text = shown(name)
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in text)
    text.encode("utf-8")  # printable on a UTF-8 terminal (a lone surrogate was a UnicodeEncodeError)
    if name.isprintable():
        assert text == name


def test_a_stack_name_with_an_ansi_escape_is_shown_escaped(tmp_path, capsys):
    from offline.render import main as render_main

    (tmp_path / "Pulumi.yaml").write_text("name: karpenter-platform\nruntime: python\nconfig: {}\n")
    assert render_main(["dev\x1b[2J", "--project-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "stacks/Pulumi.dev\\x1b[2J.yaml" in err and "\x1b" not in err
