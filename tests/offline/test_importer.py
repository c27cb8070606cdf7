"""The importer: `python -m offline.importer --team TEAM --out OUTDIR FILE_OR_DIR...`.

Inputs are our own documents (tests/fixtures/import/), modelled on Karpenter's published
examples (aws/karpenter-provider-aws examples/v1 at v1.14.1); the tests never read the mirror.
A stack using the imported files must render every field of the original specs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.platform import load_platform
from offline.importer import run
from components.config.imports import Document, import_documents
from components.roundtrip import spec_differences
from components.crds import CrdValidator
from components.nodeclasses import nodeclass_manifest
from components.nodepools import nodepool_manifests
from tests.crd_fields import leaves
from tests.harness import MINIMAL_SETTINGS, shared, write_project

FIXTURES = Path(__file__).parents[1] / "fixtures" / "import"
EVERY_FIELD = FIXTURES / "every-field.yaml"
EXAMPLES = sorted((FIXTURES / "examples").glob("*.yaml"))


def importer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def objects(path: Path) -> list[dict]:
    found = []
    for doc in yaml.safe_load_all(path.read_text()):
        found += doc["items"] if doc.get("kind") == "List" else [doc]
    return found


def _leaf_paths(value, path=()):
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaf_paths(child, (*path, key))
    elif isinstance(value, list) and value and not all(isinstance(v, str) for v in value):
        for child in value:
            yield from _leaf_paths(child, (*path, "[]"))
    else:
        yield path


@pytest.fixture(scope="module")
def validator():
    return CrdValidator(shared("reference/karpenter/crds"))


def test_every_field_document_sets_every_field_of_the_served_specs():
    """So the round trip below covers the whole NodePool and EC2NodeClass schemas (read from the CRDs)."""
    written: dict[str, set] = {"NodePool": set(), "EC2NodeClass": set()}
    for obj in objects(EVERY_FIELD):
        for path in _leaf_paths(obj["spec"]):
            written[obj["kind"]].add(tuple(p for p in path))
    missing = []
    for kind in written:
        for leaf in leaves(kind):
            crd_path = tuple(p for p in leaf.path if p != "[]")
            mine = {tuple(p for p in path if p != "[]") for path in written[kind]}
            # a map leaf (labels, tags, ...) is written as map entries below it
            if not any(path[:len(crd_path)] == crd_path for path in mine):
                missing.append(str(leaf))
    assert missing == []


def test_import_of_every_field_exits_0_and_writes_both_files(tmp_path):
    code, out, err = importer("--team", "payments", "--out", str(tmp_path), str(EVERY_FIELD))
    assert (code, err) == (0, "")
    assert "Every field of the original specs is reproduced by the render" in out
    # what the platform adds is listed per object, exactly
    assert ("changed: tests/fixtures/import/every-field.yaml: document 3: items[1]: the render adds "
            "spec.template.metadata.labels.karpenter-platform.io/team='payments', spec.template.spec.expireAfter='720h', "
            "spec.disruption.budgets[0].nodes='10%'") in out.replace(str(FIXTURES.parent.parent.parent) + "/", "")
    team = yaml.safe_load((tmp_path / "teams" / "payments.yaml").read_text())
    assert [p["name"] for p in team["nodePools"]] == ["everything", "static", "underused"]
    classes = yaml.safe_load((tmp_path / "nodeclasses.yaml").read_text())
    assert sorted(classes) == ["by-profile", "everything"]
    assert "role" not in classes["everything"] and classes["by-profile"]["instanceProfile"] == "payments-nodes"


def _stack_from_import(tmp_path: Path, team: str, *inputs: Path):
    out = tmp_path / "out"
    code, _, err = importer("--team", team, "--out", str(out), *map(str, inputs))
    assert code == 0, err
    # every-field.yaml holds a static NodePool, which the stack refuses without Karpenter's gate.
    settings = {**MINIMAL_SETTINGS, "nodeClasses": yaml.safe_load((out / "nodeclasses.yaml").read_text()),
                "teams": [team], "karpenter": {"featureGates": {"staticCapacity": True}}}
    project = write_project(tmp_path / "project", settings,
                            {team: (out / "teams" / f"{team}.yaml").read_text()})
    return load_platform(project, "test")


@pytest.mark.parametrize("source", [EVERY_FIELD, *EXAMPLES], ids=lambda p: p.name)
@pytest.mark.slow
def test_a_stack_using_the_imported_files_renders_every_original_field(tmp_path, source, validator):
    """Through the real loader (stack file + team file) and the real builders; platform additions
    (team label, node role, managed selectors, limits where none were set, explicit defaults) aside."""
    platform = _stack_from_import(tmp_path, "payments", source)
    pools = {m["metadata"]["name"]: m for m in nodepool_manifests(platform)}
    classes = {name: nodeclass_manifest(name, nc, cluster_name="acme", role="node-role")
               for name, nc in platform.settings.node_classes.items()}
    for obj in objects(source):
        name = obj["metadata"]["name"]
        if obj["kind"] == "NodePool":
            rendered = pools[f"payments-{name}"]
            assert spec_differences(obj["spec"], rendered["spec"]) == []
        else:
            rendered = classes[name]
            assert spec_differences(obj["spec"], rendered["spec"],
                                    managed=("role", "subnetSelectorTerms", "securityGroupSelectorTerms")) == []
        assert [str(v) for v in validator.validate(rendered)] == []


def test_spec_differences_names_a_field_the_render_drops():
    original = {"template": {"spec": {"requirements": [{"key": "a", "operator": "Exists", "minValues": 2}]}},
                "limits": {"cpu": 100}}
    rendered = {"template": {"spec": {"requirements": [{"key": "a", "operator": "Exists"}]}}, "limits": {"cpu": "100"}}
    assert spec_differences(original, rendered) == ["spec.template.spec.requirements[0].minValues: 2 renders as absent"]


def test_omitted_consolidate_after_is_written_as_the_crd_default(tmp_path):
    """karpenter.sh_nodepools.yaml defaults spec.disruption to {consolidateAfter: 0s}; the import says so."""
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"}, "requirements": []}}}}
    result = import_documents([Document("p.yaml", "document 1", pool)], "web")
    assert result.team["nodePools"][0]["disruption"] == {"consolidateAfter": "0s"}
    assert result.team["nodePools"][0]["limits"] == {"cpu": "128", "memory": "1Ti"}  # the dev ceilings fit
    assert any("spec.limits: none in the original" in line for line in result.changes)
    assert any("'default' was not among the input" in line for line in result.changes)


NODEPOOL_HEAD = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""
# What the EC2NodeClass CRD requires beside role/instanceProfile (the stack replaces both on import).
CLASS_TERMS = "  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{tags: {a: b}}]\n"


@pytest.mark.parametrize("text, expected", [
    (NODEPOOL_HEAD.replace("requirements: []", "requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, "
                                                "values: [four]}]"),
     "in.yaml: document 1: NodePool \"web\": spec.template.spec.requirements: requirements operator 'Gt', 'Lt', 'Gte', "
     "or 'Lte' must have a single positive integer value"),
    (NODEPOOL_HEAD + "  disruption: {consolidateAfter: 0s, consolidationPolicy: WhenUnderutilized}\n",
     "in.yaml: document 1: NodePool \"web\": spec.disruption.consolidationPolicy: 'WhenUnderutilized' is not one of "
     "['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']"),
    (NODEPOOL_HEAD + "  replicas: 2\n  limits: {cpu: '10'}\n",
     "in.yaml: document 1: NodePool \"web\": spec: only 'limits.nodes' is supported on static NodePools"),
    (NODEPOOL_HEAD.replace("spec:\n  template:", "spec:\n  template:\n    metadata: {labels: {karpenter.sh/nodepool: x}}"),
     "in.yaml: document 1: NodePool \"web\": spec.template.metadata.labels: label \"karpenter.sh/nodepool\" is restricted"),
    (NODEPOOL_HEAD + "      kubelet: {maxPods: 10}\n",
     "in.yaml: document 1: NodePool \"web\": spec.template.spec.kubelet: unknown field (not in the karpenter.sh/v1 "
     "NodePool schema)"),
    (NODEPOOL_HEAD.replace("group: karpenter.k8s.aws,", "group: karpenter.k8s.aws/v1,"),
     "in.yaml: document 1: NodePool \"web\": spec.template.spec.nodeClassRef.group: 'karpenter.k8s.aws/v1' does not "
     "match '^[^/]*$'"),
    (NODEPOOL_HEAD.replace("karpenter.sh/v1\n", "karpenter.sh/v1beta1\n"),
     "in.yaml: document 1: spec.template.spec.nodeClassRef.group: unknown field 'group' (not in the "
     "karpenter.sh/v1beta1 NodePool schema)"),
    ("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec:\n" + CLASS_TERMS + "  role: r\n  instanceProfile: p\n"
     "  amiSelectorTerms: [{alias: al2023@v20251117}]\n",
     "in.yaml: document 1: EC2NodeClass \"x\": spec: must specify exactly one of ['role', 'instanceProfile']"),
    ("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec:\n" + CLASS_TERMS +
     "  amiSelectorTerms: [{id: ami-1}]\n",
     "in.yaml: document 1: EC2NodeClass \"x\": spec: must specify exactly one of ['role', 'instanceProfile']"),
    ("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec:\n" + CLASS_TERMS + "  role: r\n"
     "  amiSelectorTerms: [{id: ami-1}]\n",
     "in.yaml: document 1: EC2NodeClass \"x\": spec: must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec:\n" + CLASS_TERMS + "  role: r\n"
     "  amiSelectorTerms: [{alias: al2023@v1}]\n  kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}\n",
     "in.yaml: document 1: EC2NodeClass \"x\": spec.kubelet: imageGCHighThresholdPercent must be greater than "
     "imageGCLowThresholdPercent"),
    ("kind: NodePool\nmetadata: {name: a\n", "in.yaml: malformed YAML: line"),
    ("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\nspec: {ttlSecondsAfterEmpty: -30}\n",
     "in.yaml: document 1: spec.ttlSecondsAfterEmpty: expected a non-negative whole number of seconds, got -30"),
    ("apiVersion: karpenter.sh/v1beta2\nkind: NodePool\nmetadata: {name: a}\n",
     "in.yaml: document 1: apiVersion: 'karpenter.sh/v1beta2': karpenter.sh/v1 is imported"),
])
def test_invalid_or_refused_input_exits_2_with_file_and_key_path_and_writes_nothing(tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    Path("in.yaml").write_text(text)
    code, out, err = importer("--team", "web", "--out", "out", "in.yaml")
    assert code == 2
    assert any(line.startswith(f"error: {expected}") for line in err.splitlines()), err
    assert not Path("out").exists()


def test_a_bad_alias_is_reported_at_its_key_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("in.yaml").write_text("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec:\n" + CLASS_TERMS +
                               "  instanceProfile: p\n  amiSelectorTerms: [{alias: windows2022@v1}]\n")
    code, _, err = importer("--team", "web", "--out", "out", "in.yaml")
    assert code == 2 and ("EC2NodeClass \"x\": spec.amiSelectorTerms[0].alias: windows families may only specify "
                          "version 'latest'") in err


def test_a_folder_is_read_recursively_and_other_kinds_are_skipped_with_a_note(tmp_path):
    source = tmp_path / "in" / "nested"
    source.mkdir(parents=True)
    (source / "pool.yml").write_text(NODEPOOL_HEAD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    (tmp_path / "in" / "class.yaml").write_text(
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n" + CLASS_TERMS + "  role: r\n"
        "  amiSelectorTerms: [{alias: al2023@v20251117}]\n")
    (tmp_path / "in" / "README.md").write_text("not yaml")
    code, out, err = importer("--team", "web", "--out", str(tmp_path / "out"), str(tmp_path / "in"))
    assert (code, err) == (0, "")
    assert "Imported 2 object(s): NodePool web-web, EC2NodeClass default" in out
    assert "skipped ConfigMap c (only NodePool and EC2NodeClass are imported)" in out


def test_a_pool_named_with_the_team_prefix_keeps_its_name(tmp_path):
    (tmp_path / "in.yaml").write_text(NODEPOOL_HEAD.replace("name: web}", "name: web-api}"))
    code, out, _ = importer("--team", "web", "--out", str(tmp_path / "out"), str(tmp_path / "in.yaml"))
    assert code == 0 and "NodePool web-api" in out and "renders as" not in out


def test_an_existing_team_file_is_kept_unless_forced(tmp_path):
    (tmp_path / "in.yaml").write_text(NODEPOOL_HEAD)
    (tmp_path / "out" / "teams").mkdir(parents=True)
    (tmp_path / "out" / "teams" / "web.yaml").write_text("name: web\n")
    code, _, err = importer("--team", "web", "--out", str(tmp_path / "out"), str(tmp_path / "in.yaml"))
    assert code == 2 and "exists" in err
    assert (tmp_path / "out" / "teams" / "web.yaml").read_text() == "name: web\n"
    code, _, _ = importer("--team", "web", "--out", str(tmp_path / "out"), "--force", str(tmp_path / "in.yaml"))
    assert code == 0 and "nodePools" in (tmp_path / "out" / "teams" / "web.yaml").read_text()


def test_two_node_classes_of_the_same_name_are_refused(tmp_path):
    text = ("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n" + CLASS_TERMS + "  role: r\n"
            "  amiSelectorTerms: [{alias: al2023@v20251117}]\n")
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(text)
    code, _, err = importer("--team", "web", "--out", str(tmp_path / "out"), str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
    assert code == 2 and f"error: {tmp_path / 'b.yaml'}: document 1: metadata.name: EC2NodeClass 'default' is also defined" in err


def test_missing_input_and_bad_team_name_exit_2(tmp_path):
    assert importer("--team", "web", "--out", str(tmp_path), str(tmp_path / "nope.yaml"))[0] == 2
    code, _, err = importer("--team", "Web_Team", "--out", str(tmp_path), str(EVERY_FIELD))
    assert code == 2 and "--team" in err


def test_an_empty_out_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    """`--out ""` names no folder: refused like a missing --out (it used to reach the writer: TypeError)."""
    (tmp_path / "in.yaml").write_text(NODEPOOL_HEAD)
    monkeypatch.chdir(tmp_path)
    code, out, err = importer("--team", "web", "--out", "", str(tmp_path / "in.yaml"))
    assert (code, out) == (2, "")
    assert "error: --out: required" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.yaml"]


@pytest.mark.slow
def test_the_program_renders_an_imported_team_with_its_overlay_end_to_end(tmp_path, validator):
    """The real __main__.py under the mock monitor, for a project made of the imported files (plus a
    team NodeOverlay): every original field in the declared objects, the nodeOverlay gate on."""
    import shutil

    from offline.render import render_stack
    from tests.harness import PROJECT_DIR

    out = tmp_path / "out"
    assert importer("--team", "payments", "--out", str(out), str(EVERY_FIELD))[0] == 0
    team = yaml.safe_load((out / "teams" / "payments.yaml").read_text())
    team["nodeOverlays"] = [{"name": "efa", "capacity": {"vpc.amazonaws.com/efa": "1"},
                             "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                               "values": ["p5"]}]}]
    settings = {**MINIMAL_SETTINGS, "nodeClasses": yaml.safe_load((out / "nodeclasses.yaml").read_text()),
                "teams": ["payments"], "karpenter": {"featureGates": {"staticCapacity": True}}}
    project = write_project(tmp_path / "project", settings, {"payments": team})
    shutil.copy(PROJECT_DIR / "__main__.py", project / "__main__.py")
    capture = render_stack(project, "test")
    declared = {(r.inputs.get("kind"), r.inputs["metadata"]["name"]): r.inputs for r in capture.resources
                if str(r.inputs.get("apiVersion", "")).startswith("karpenter.")}
    for obj in objects(EVERY_FIELD):
        name = obj["metadata"]["name"]
        rendered = declared[(obj["kind"], f"payments-{name}" if obj["kind"] == "NodePool" else name)]
        managed = ("role", "subnetSelectorTerms", "securityGroupSelectorTerms") if obj["kind"] == "EC2NodeClass" else ()
        assert spec_differences(obj["spec"], rendered["spec"], managed=managed) == []
    overlay = declared[("NodeOverlay", "payments-efa")]
    assert overlay["spec"]["requirements"][-1] == {"key": "karpenter.sh/nodepool", "operator": "In",
                                                   "values": ["payments-everything", "payments-static",
                                                              "payments-underused"]}
    assert [str(v) for m in declared.values() for v in validator.validate(m)] == []
    (controller,) = [r for r in capture.resources if r.name == "karpenter-controller"]
    assert controller.inputs["values"]["settings"]["featureGates"]["nodeOverlay"] is True


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "x", "In", "spot", "1Gi"]))
_KEYS = st.sampled_from(["apiVersion", "kind", "metadata", "name", "spec", "template", "requirements", "nodeClassRef",
                         "amiSelectorTerms", "alias", "role", "limits", "disruption", "items", "blockDeviceMappings"])
_TREES = st.recursive(_SCALARS, lambda children: st.one_of(st.lists(children, max_size=3),
                                                           st.dictionaries(_KEYS, children, max_size=4)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(body=_TREES, kind=st.sampled_from(["NodePool", "EC2NodeClass", "List", "ConfigMap"]),
       spec=_TREES)
@pytest.mark.slow
def test_no_input_makes_the_importer_crash(body, kind, spec):
    """Whatever the documents hold, the importer answers with errors, notes or files, never a traceback."""
    documents = [body, {"apiVersion": "karpenter.sh/v1" if kind == "NodePool" else "karpenter.k8s.aws/v1",
                        "kind": kind, "metadata": {"name": "x"}, "spec": spec, "items": [body]}]
    result = import_documents([Document("f.yaml", f"document {i + 1}", d) for i, d in enumerate(documents)], "web")
    assert result.errors or result.team is not None


@settings(max_examples=150, deadline=None)
@given(requirements=_TREES, disruption=_TREES, labels=_TREES, terms=_TREES, devices=_TREES)
@pytest.mark.slow
def test_no_nearly_valid_object_makes_the_importer_crash(requirements, disruption, labels, terms, devices):
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "c"},
                "requirements": requirements}}, "disruption": disruption}}
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "c"},
                  "spec": {"role": "r", "amiSelectorTerms": terms, "blockDeviceMappings": devices}}
    docs = [Document("f.yaml", "document 1", pool), Document("f.yaml", "document 2", node_class)]
    result = import_documents(docs, "web")
    if not result.errors:
        from components.roundtrip import roundtrip

        assert roundtrip(docs, result, "web").losses == []
