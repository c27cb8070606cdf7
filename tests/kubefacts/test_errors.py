"""One located-error type: every tool's bad-input error derives from kubefacts.errors.LocatedError,
keeps the base class callers caught before (ValueError where it was one), and prints as before."""
import pytest

from components.config.errors import ConfigError, ConfigIssue
from kubefacts.errors import LocatedError
from kubefacts.yamlread import UnsafeInput
from offline.pr_report import ReportError
from offline.preflight import PreflightError
from policies.check import InputError as CheckInputError
from policies.engine import ConfigError as PolicyConfigError
from provisioner.disruption.cron import CronError
from provisioner.errors import InputError
from provisioner.scheduling.volumes import VolumeError


@pytest.mark.parametrize("error, was_value_error", [
    (ConfigError, False), (CheckInputError, False), (PolicyConfigError, True), (InputError, True), (UnsafeInput, True),
    (ReportError, False), (PreflightError, False), (CronError, True), (VolumeError, False),
])
def test_every_tool_error_is_a_located_error(error, was_value_error):
    assert issubclass(error, LocatedError)
    assert issubclass(error, ValueError) is was_value_error


def test_located_error_prints_file_line_column_object_and_key_path():
    err = LocatedError("team.yaml", 3, 7, "nodePools[0].limits", "bad", obj='NodePool "web"')
    assert str(err) == 'team.yaml:3:7: NodePool "web": nodePools[0].limits: bad'
    assert str(LocatedError(None, None, None, None, "only the message")) == "only the message"


def test_each_tool_keeps_its_wording_and_fields():
    issue = InputError("missing", origin="pods.yaml", obj='Pod "a"', path="spec.containers")
    assert str(issue) == 'pods.yaml: Pod "a": spec.containers: missing'
    assert (issue.file, issue.key_path, issue.origin, issue.path) == ("pods.yaml", "spec.containers", "pods.yaml", "spec.containers")
    refused = UnsafeInput("duplicate key 'a'", origin="x.yaml", line=2, column=1, path="a")
    assert str(refused) == "x.yaml:2:1: a: duplicate key 'a'" and refused.origin == "x.yaml:2:1"
    config = ConfigError([ConfigIssue("stacks/teams/web.yaml", "nodePools[0].name", "bad"), ConfigIssue("b.yaml", "", "worse")])
    assert str(config) == "stacks/teams/web.yaml: nodePools[0].name: bad\nb.yaml: worse"
    assert (config.file, config.key_path) == ("stacks/teams/web.yaml", "nodePools[0].name")
    assert str(ReportError("git: no such commit")) == "git: no such commit"
