"""offline/import_checks.py: what the stacks say about an import (ceilings from
policies/levels.py for the environments the stack files name, node class names in use)."""

from __future__ import annotations

from offline.import_checks import StackView, name_clashes, read_stacks, strictest_limits
from tests.harness import MINIMAL_SETTINGS, PROJECT_DIR, write_project


def test_the_shipped_stacks_give_dev_ceilings_as_the_default_limits():
    views, warnings = read_stacks(PROJECT_DIR)
    assert warnings == []
    assert [(v.name, v.environment) for v in views] == [("dev", "dev"), ("prod", "prod"), ("staging", "staging")]
    assert strictest_limits(views) == {"cpu": "128", "memory": "1Ti"}


def test_without_dev_the_strictest_of_the_others_applies():
    views = [StackView("prod", "prod", ()), StackView("staging", "staging", ())]
    assert strictest_limits(views) == {"cpu": "512", "memory": "4Ti"}


def test_a_stack_names_its_environment_and_gets_the_default_node_class(tmp_path):
    project = write_project(tmp_path, {**MINIMAL_SETTINGS, "environment": "prod"}, {}, stack="eu")
    (view,) = read_stacks(project)[0]
    assert (view.environment, view.node_classes) == ("prod", ("default",))
    assert name_clashes([view], ["default", "gpu"]) == [
        "EC2NodeClass 'default' already exists in stacks/Pulumi.eu.yaml (karpenter-platform:nodeClasses.default, the "
        "platform's default class when not set): pasting nodeclasses.yaml there would replace it for every team using it. "
        "Rename the imported class (its metadata.name and the NodePools' nodeClassRef.name) and import again, or leave "
        "it out if the stack's class suits these NodePools"]


def test_a_project_without_stacks_is_said_so(tmp_path):
    views, warnings = read_stacks(tmp_path)
    assert views == [] and strictest_limits(views) == {"cpu": "128", "memory": "1Ti"}
    assert warnings == [f"{tmp_path / 'stacks'} holds no Pulumi.<stack>.yaml: no policy check, and the policy pack's "
                        "default ceilings {'cpu': '128', 'memory': '1Ti'} for NodePools without limits"]
