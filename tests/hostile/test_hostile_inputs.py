"""Hostile inputs never crash, hang or slip through: each is exit 2 naming the file and key path,
with nothing rendered (issue 12). Config cases run `offline.render` in-process; manifests run
`provisioner simulate` in-process, except the 100,000-deep document, which runs in a subprocess
(a crash of the C YAML composer would take the test process with it)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from offline.render import main as render_main
from policies.check import main as check_main
from provisioner.cli import main as provisioner_main
from tests.harness import PROJECT_DIR
from tests.hostile.corpus import (CONFIG_CASES, MANIFEST_CASES, POOL, SETTINGS, STACK, TEAM, UTF16_BOM_TEAM,
                                  pod_list, stack_text, team_text, write_project)


def _project(tmp_path, files: dict) -> tuple:
    return write_project(tmp_path, files), tmp_path / "build" / "test"


@pytest.mark.parametrize("case_id,files,expected", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_hostile_config_is_exit_2_naming_file_and_key_with_nothing_rendered(tmp_path, capsys, case_id, files, expected):
    project, out = _project(tmp_path, files)
    rc = render_main(["test", "--project-dir", str(project), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    for text in expected:
        assert text in err, f"{text!r} not in:\n{err[:2000]}"
    assert "Traceback" not in err
    assert not out.exists()


def test_utf16_with_bom_is_read_as_text(tmp_path):
    from components.platform import load_platform

    project, _ = _project(tmp_path, {TEAM: UTF16_BOM_TEAM})
    assert [p.name for p in load_platform(project, "test").teams[0].node_pools] == ["pool"]


def test_unquoted_date_in_free_form_values_stays_text(tmp_path):
    from components.config.loader import load_yaml

    path = tmp_path / "x.yaml"
    path.write_text("values: {since: 2024-01-01}\n")
    assert load_yaml(path, "x.yaml") == {"values": {"since": "2024-01-01"}}
    json.dumps(load_yaml(path, "x.yaml"))  # JSON can hold it: the CLI config path never crashes


def test_error_in_karpenter_block_does_not_empty_the_zones(tmp_path, capsys):
    """One bad section no longer cascades: the multi-zone pool keeps its zones."""
    settings = {**SETTINGS, "karpenter": {"replicas": "many"}}
    project, out = _project(tmp_path, {STACK: stack_text(settings), TEAM: team_text(preset="multi-zone")})
    assert render_main(["test", "--project-dir", str(project), "--out", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "karpenter-platform:karpenter.replicas" in errors[0]


def test_pool_declaring_odigos_taint_as_taint_gets_no_second_copy():
    from components.config.nodepools import NodePool
    from components.config.teams import Team
    from components.nodepools import nodepool_manifest

    pool = NodePool.model_validate({**POOL, "taints": [{"key": "odigos.io/needs-init", "effect": "NoSchedule"}]})
    manifest = nodepool_manifest(Team(name="web", node_pools=[pool]), pool, odigos_taint=True)
    spec = manifest["spec"]["template"]["spec"]
    pairs = [(t["key"], t["effect"]) for t in spec.get("taints", []) + spec.get("startupTaints", [])]
    assert pairs == [("odigos.io/needs-init", "NoSchedule")]


def _simulate(tmp_path, capsys, content, *extra) -> tuple[int, str]:
    path = tmp_path / "in.yaml"
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    rc = provisioner_main(["simulate", "-f", str(path), "-o", "json", *extra])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("case_id,content,expected", [c for c in MANIFEST_CASES if c[0] != "deep-mapping-100k"],
                         ids=[c[0] for c in MANIFEST_CASES if c[0] != "deep-mapping-100k"])
def test_hostile_manifest_is_exit_2_naming_file_and_key(tmp_path, capsys, case_id, content, expected):
    if content is None:
        content = pod_list(1_001)
    extra = ["--max-pods", "1000"] if case_id == "pod-list-200k" else []  # the 200k file itself: benchmark
    rc, err = _simulate(tmp_path, capsys, content, *extra)
    assert rc == 2, err
    assert str(tmp_path / "in.yaml") in err
    for text in expected:
        assert text in err, f"{text!r} not in:\n{err[:2000]}"


def test_max_pods_option_raises_the_ceiling(tmp_path, capsys):
    content = pod_list(20)
    assert _simulate(tmp_path, capsys, content, "--max-pods", "10")[0] == 2
    assert _simulate(tmp_path, capsys, content, "--max-pods", "20")[0] == 0


def test_100k_deep_document_is_refused_without_crashing_the_process(tmp_path):
    """Through libyaml's composer this used to segfault (exit 139); the depth is checked on the
    event stream first. Run in a subprocess so a crash could not take the test run down."""
    path = tmp_path / "deep.yaml"
    path.write_text({c[0]: c[1] for c in MANIFEST_CASES}["deep-mapping-100k"])
    result = subprocess.run([sys.executable, "-m", "provisioner", "simulate", "-f", str(path)], capture_output=True,
                            text=True, timeout=60, cwd=PROJECT_DIR)
    assert result.returncode == 2, result.stderr
    assert "nested deeper than 64 levels" in result.stderr and str(path) in result.stderr


# --- corrupted build folders for policies.check ------------------------------------------------

def _build(tmp_path, resources) -> str:
    build = tmp_path / "build"
    build.mkdir()
    if isinstance(resources, bytes):
        (build / "resources.json").write_bytes(resources)
    else:
        (build / "resources.json").write_text(resources)
    return str(build)


@pytest.mark.parametrize("case_id,resources,expected", [
    ("empty-list", "[]", "holds no resources"),
    ("binary", b"\x00\x01\x02", "binary"),
    ("deep-100k", "[" * 100_000 + "]" * 100_000, "nested deeper"),
    ("options-list", json.dumps([{"type": "kubernetes:core/v1:Namespace", "name": "x", "options": [1]}]), "[0].options"),
    ("inputs-list", json.dumps([{"type": "kubernetes:core/v1:Namespace", "name": "x", "inputs": [1]}]), "[0].inputs"),
    ("nan", '[{"type": "a", "inputs": {"x": NaN}}]', "finite"),
    ("duplicate-key", '[{"type": "a", "type": "b"}]', "duplicate key"),
    ("not-a-list", '{"type": "a"}', "JSON list"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_corrupted_build_is_exit_2_for_the_policy_check(tmp_path, capsys, case_id, resources, expected):
    rc = check_main([_build(tmp_path, resources)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert expected in err and "resources.json" in err


def test_report_path_that_is_a_folder_is_exit_2(tmp_path, capsys):
    build = _build(tmp_path, json.dumps([{"type": "kubernetes:core/v1:Namespace", "name": "x", "inputs": {}}]))
    rc = check_main([build, "--report", str(tmp_path)])
    assert rc == 2
    assert "cannot write the report" in capsys.readouterr().err


def test_policy_config_that_is_not_json_is_exit_2(tmp_path, capsys):
    build = _build(tmp_path, json.dumps([{"type": "kubernetes:core/v1:Namespace", "name": "x", "inputs": {}}]))
    config = tmp_path / "config.json"
    config.write_bytes(b"\xff\xfe\x00")
    assert check_main([build, "--config", str(config)]) == 2
    assert "config.json" in capsys.readouterr().err


def test_shipped_stack_files_still_load_through_the_bounded_loader():
    from kubefacts.yamlread import load_yaml_file

    for path in sorted((PROJECT_DIR / "stacks").rglob("*.yaml")):
        assert isinstance(load_yaml_file(path), dict), path
    assert yaml  # the corpus writes YAML with PyYAML's dumper; reading goes through safeyaml only


def test_advisor_in_flight_nodeclaim_with_mistyped_fields_is_not_a_crash():
    """Objects from the API server are type-checked before use: a NodeClaim whose labels or
    nodeName have the wrong type is an InputError naming the key, never a traceback."""
    from provisioner.errors import InputError
    from provisioner.loader import load_objects

    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
             "metadata": {"name": "c", "uid": "u", "labels": [1]},
             "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                      "requirements": []},
             "status": {"allocatable": {"cpu": "1"}, "providerID": "aws:///us-east-1a/i-1"}}
    with pytest.raises(InputError, match="metadata.labels"):
        load_objects([claim])
    fixed = {**claim, "metadata": {"name": "c", "uid": "u"}, "status": {**claim["status"], "nodeName": ["x"]}}
    with pytest.raises(InputError, match="status.nodeName"):
        load_objects([fixed])
