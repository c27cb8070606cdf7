"""A refused config is reported before the heavy imports (BENCHMARKS.md "Hostile input"): the
config loader reaches `kubefacts.yamlread` without the scheduler and numpy, and `offline.render`
imports the Pulumi SDK only once the config has passed."""
from __future__ import annotations

import subprocess
import sys

from tests.harness import PROJECT_DIR
import pytest

import provisioner
from tests.hostile.corpus import STACK, TEAM, stack_text, team_text

PROBE = """
import sys
from offline.render import main
code = main(sys.argv[1:])
print(code, *sorted(m for m in ("pulumi", "grpc", "numpy", "provisioner.scheduling.scheduler") if m in sys.modules))
"""


@pytest.mark.slow
def test_a_refused_stack_file_is_reported_without_importing_pulumi_or_numpy(tmp_path):
    (tmp_path / "stacks" / "teams").mkdir(parents=True)
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / STACK).write_text(stack_text(raw="  1: 2\n"))
    (tmp_path / TEAM).write_text(team_text())
    result = subprocess.run([sys.executable, "-c", PROBE, "test", "--project-dir", str(tmp_path)],
                            capture_output=True, text=True, cwd=PROJECT_DIR, timeout=120)
    assert result.stdout.split() == ["2"], result.stdout + result.stderr
    assert "config.1: malformed YAML" in result.stderr


def test_the_public_names_of_provisioner_load_on_first_use():
    from provisioner import InputError, simulate
    from provisioner.api import simulate as defined
    from provisioner.errors import InputError as error

    assert simulate is defined and InputError is error
    assert set(provisioner.__all__) <= set(dir(provisioner))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        provisioner.nothing  # noqa: B018
