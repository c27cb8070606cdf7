"""The importer on the real inputs: the install guides' own YAML (../shared/seed-examples: a
v1alpha5 Provisioner with an inline provider, a v1beta1 NodePool and EC2NodeClass), Karpenter's
examples/v1 (../shared/import_corpus) and real users' files (../shared/realworld2/corpus).

Conversion follows aws/karpenter-provider-aws tools/karpenter-convert/pkg/convert/convert.go and
website/content/en/v1.0/upgrading/v1-migration.md, kubernetes-sigs/karpenter
pkg/apis/v1/nodepool_conversion.go and aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass_conversion.go
(v1.0.8); the CRD check is components/crds.py at the release the stacks pin."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from components.platform import load_platform
from offline.importer import read_documents, run
from components.config.imports import import_documents
from components.config.migrate import migrate_documents
from components.roundtrip import roundtrip
from components.crds import validator_for
from provisioner.api import simulate
from provisioner.report import render_json
from tests.harness import MINIMAL_SETTINGS, PROJECT_DIR, shared, write_project


def importer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def small_project(tmp_path_factory) -> Path:
    """One stack (environment `test`: the policy pack's default row, dev's ceilings), no teams."""
    return write_project(tmp_path_factory.mktemp("project"), dict(MINIMAL_SETTINGS), {})


@pytest.mark.parametrize("example", ["provisioner-v1alpha5.yaml", "getting-started-v1beta1.yaml"])
def test_each_install_guide_example_converts_and_passes_the_pinned_crd_check(tmp_path, example):
    source = shared(f"seed-examples/{example}")
    code, out, err = importer("--team", "web", "--dry-run", str(source))
    assert code == 0, err
    assert "\nDry run: nothing written.\n" in err and "CRD check" not in err
    pinned = load_platform(PROJECT_DIR, "prod").settings.karpenter.version
    objects = list(yaml.safe_load_all(out))
    assert sorted((o["apiVersion"], o["kind"]) for o in objects) == [("karpenter.k8s.aws/v1", "EC2NodeClass"),
                                                                    ("karpenter.sh/v1", "NodePool")]
    assert {o["kind"]: [str(v) for v in validator_for(pinned).validate(o)] for o in objects} == {
        "NodePool": [], "EC2NodeClass": []}


def test_the_v04_provisioner_converts_field_by_field(tmp_path):
    code, out, err = importer("--team", "web", "--dry-run", str(shared("seed-examples/provisioner-v1alpha5.yaml")))
    assert code == 0
    pool, node_class = yaml.safe_load_all(out)
    assert pool["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "al2@latest"}]
    assert "spec.ttlSecondsAfterEmpty: 30 written as consolidationPolicy: WhenEmpty, consolidateAfter: 30s" in err
    assert "spec.provider.instanceProfile: 'KarpenterNodeInstanceProfile-my-cluster' replaced by a node role" in err


def test_simulate_plans_inflate_on_the_converted_provisioners_pool():
    """provisioner simulate's core over the converted v1 YAML and the guide's inflate Deployment (15 x 1 cpu)."""
    code, out, _ = importer("--team", "web", "--dry-run", str(shared("seed-examples/provisioner-v1alpha5.yaml")))
    assert code == 0
    inflate = yaml.safe_load(shared("seed-examples/inflate.yaml").read_text())
    plan = json.loads(render_json(simulate([*yaml.safe_load_all(out), inflate])))
    assert plan["summary"]["scheduled"] == 15 and plan["unschedulable"] == []
    assert {claim["nodepool"] for claim in plan["nodeclaims"]} == {"default"}
    assert {claim["capacity_type"] for claim in plan["nodeclaims"]} == {"on-demand"}  # v1alpha5's default, written out


def test_a_v1beta1_import_writes_the_team_file_and_says_when_idle_is_read_as_when_empty(tmp_path, small_project):
    code, out, err = importer("--team", "web", "--out", str(tmp_path), "--project", str(small_project),
                              str(shared("seed-examples/getting-started-v1beta1.yaml")))
    assert (code, err) == (0, "")
    team = yaml.safe_load((tmp_path / "teams" / "web.yaml").read_text())
    assert team["nodePools"][0]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    assert "'WhenIdle' is not a Karpenter policy" in out
    assert "spec.template.spec.nodeClassRef: apiVersion 'karpenter.k8s.aws/v1beta1' written as group: karpenter.k8s.aws" in out


def test_dry_run_writes_nothing(tmp_path):
    code, out, _ = importer("--team", "web", "--out", str(tmp_path / "out"), "--dry-run",
                            str(shared("seed-examples/provisioner-v1alpha5.yaml")))
    assert code == 0 and out.startswith("apiVersion: karpenter.sh/v1\nkind: NodePool\n")
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_is_a_message_not_a_traceback(tmp_path):
    """The input that showed it: `--out FILE` validated everything, then mkdir raised NotADirectoryError."""
    target = tmp_path / "file"
    target.write_text("")
    code, out, err = importer("--team", "web", "--out", str(target), str(shared("seed-examples/provisioner-v1alpha5.yaml")))
    assert (code, out) == (2, "")
    assert err == f"error: {target}: exists and is not a folder; --out names the folder to write teams/web.yaml and " \
                  "nodeclasses.yaml into\n"


def test_an_existing_nodeclasses_file_is_merged_and_a_different_class_is_kept_unless_forced(tmp_path, small_project):
    out = tmp_path / "out"
    out.mkdir()
    (out / "nodeclasses.yaml").write_text("# earlier import\nbatch: {amiAlias: al2023@v20251117}\n"
                                          "default: {amiAlias: al2023@v20251117}\n")
    source = str(shared("seed-examples/getting-started-v1beta1.yaml"))
    code, _, err = importer("--team", "web", "--out", str(out), "--project", str(small_project), source)
    assert code == 2 and f"error: {out / 'nodeclasses.yaml'}: default: already holds a different EC2NodeClass" in err
    assert not (out / "teams").exists()
    assert yaml.safe_load((out / "nodeclasses.yaml").read_text())["default"] == {"amiAlias": "al2023@v20251117"}
    code, stdout, _ = importer("--team", "web", "--out", str(out), "--project", str(small_project), "--force", source)
    classes = yaml.safe_load((out / "nodeclasses.yaml").read_text())
    assert code == 0 and sorted(classes) == ["batch", "default"] and "amiSelectorTerms" in classes["default"]
    assert "merged; kept the node classes already there: batch" in stdout


def test_a_node_class_named_like_one_in_the_stacks_is_warned_about(tmp_path):
    code, _, err = importer("--team", "web", "--dry-run", str(shared("seed-examples/getting-started-v1beta1.yaml")))
    assert code == 0
    assert ("warning: EC2NodeClass 'default' already exists in stacks/Pulumi.dev.yaml, stacks/Pulumi.prod.yaml, "
            "stacks/Pulumi.staging.yaml (karpenter-platform:nodeClasses.default") in err


def test_default_limits_fit_the_strictest_ceilings_and_policy_findings_are_warned(tmp_path):
    """policies/levels.py: dev's ceilings (cpu 128, memory 1Ti) are the strictest of the stacks; the old
    defaults (cpu 1000, 4000Gi) failed nodepool-limits-within-ceiling in dev."""
    source = tmp_path / "in.yaml"
    source.write_text(yaml.safe_dump({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "big"},
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                        "name": "default"}, "requirements": []}}}}))
    code, _, err = importer("--team", "web", "--dry-run", str(source))
    assert code == 0
    assert "spec.limits: none in the original; added {'cpu': '128', 'memory': '1Ti'}" in err
    assert "warning: policy nodepool-limits-within-ceiling" not in err
    source.write_text(source.read_text().replace("spec:\n  template:", "spec:\n  limits: {cpu: '600'}\n  template:"))
    _, _, err = importer("--team", "web", "--dry-run", str(source))
    assert ("warning: policy nodepool-limits-within-ceiling (mandatory in dev): NodePool web-big: NodePool web-big limit "
            "cpu=600 is above the dev ceiling of 128\n") in err


def _corpus() -> list[Path]:
    roots = [shared("seed-examples"), shared("import_corpus/examples-v1"), shared("realworld2/corpus")]
    return sorted(p for root in roots for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".tpl"))


def test_every_real_input_converts_or_is_refused_with_a_located_message():
    """The core the importer runs, over every file of the three corpora (one import per file)."""
    outcomes = {}
    for path in _corpus():
        docs, issues = read_documents([str(path)])
        migration = migrate_documents(docs)
        result = import_documents(migration.documents, "web")
        errors = issues + migration.log.errors + result.errors
        for error in errors:
            assert error.file == str(path) and error.path.startswith("document "), error
        if not errors and result.team is not None:
            assert roundtrip(migration.documents, result, "web").losses == []
        outcomes[path.name] = "refused" if errors else "imported"
    assert outcomes["provisioner-v1alpha5.yaml"] == outcomes["getting-started-v1beta1.yaml"] == "imported"
    assert sum(v == "imported" for v in outcomes.values()) >= 40
