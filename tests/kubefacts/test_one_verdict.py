"""One verdict, in the same words, in every tool: a corpus of valid and invalid Karpenter objects
(the real inputs that showed the tools disagreeing, every object of ../shared/realworld2/corpus and
../shared/import_corpus/examples-v1, and synthetic objects covering each rule family) is fed to
the validator (kubefacts.validation), the importer, `provisioner simulate`/`tune`/`drift`/
`consolidate`, the advisor's core, the policy pack and the pr-report's plan; each must refuse
exactly what the validator refuses, naming `Kind "name": key.path: message` as the validator does.

Upstream (Karpenter v1.14.1): the CRDs (kubernetes-sigs/karpenter pkg/apis/crds/karpenter.sh_*.yaml,
aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml), the runtime checks
of pkg/apis/v1/nodepool_validation.go and nodeclaim_validation.go (ValidateRequirement,
validateTaintsField), Budget.IsActive in pkg/apis/v1/nodepool.go (robfig/cron ParseStandard) and the
alias lookups of aws/karpenter-provider-aws pkg/providers/amifamily (DescribeImageQuery).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.imports import Document, import_documents
from kubefacts.validation import is_karpenter_object, validate
from kubefacts.yamlread import UnsafeInput, load_yaml_files
from offline.pr_report import plan_of
from policies import catalog
from provisioner.cli import main
from provisioner.controller import core
from provisioner.errors import InputError
from tests.harness import SHARED_DIR
from tests.policies.analyzer import messages, resource

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def pool(name: str = "web", **spec: Any) -> dict:
    template_spec = {"nodeClassRef": dict(REF), "requirements": [], **spec.pop("template_spec", {})}
    body = {"template": {"metadata": spec.pop("template_metadata", {}), "spec": template_spec}, **spec}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": body}


def nodeclass(name: str = "default", **spec: Any) -> dict:
    body = {"role": "KarpenterNodeRole-acme", "amiSelectorTerms": [{"alias": "al2023@v20251117"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "acme"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "acme"}}], **spec}
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {k: v for k, v in body.items() if v is not None}}


def overlay(name: str = "gpu-price", **spec: Any) -> dict:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name},
            "spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}],
                     **spec}}


def nodeclaim(name: str = "web-abc", **spec: Any) -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"nodeClassRef": dict(REF), "requirements": [], **spec}}


def requirement(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, "values": list(values)}


# (case name, object, expected words of the validator's first refusal or None when valid): one or
# more objects per rule family, so a family cannot silently lose its judge in one tool.
SYNTHETIC: list[tuple[str, dict, str | None]] = [
    ("valid pool", pool(disruption={"consolidateAfter": "5m", "budgets": [{"nodes": "10%", "schedule": "0 9 * * 1-5",
                                                                            "duration": "8h"}]},
                        template_spec={"requirements": [requirement("karpenter.sh/capacity-type", "In", "spot")]}), None),
    ("valid class", nodeclass(), None),
    ("valid overlay", overlay(price="1.5"), None),
    ("valid claim", nodeclaim(), None),
    ("schema: required", pool(template_spec={"nodeClassRef": {"kind": "EC2NodeClass", "name": "default"}}),
     'NodePool "web": spec.template.spec.nodeClassRef.group: Required value (the karpenter.sh/v1 NodePool schema)'),
    ("schema: unknown field", pool(template_spec={"kubelet": {"maxPods": 10}}),
     'NodePool "web": spec.template.spec.kubelet: unknown field (not in the karpenter.sh/v1 NodePool schema)'),
    ("schema: pattern (Karpenter duration)", pool(template_spec={"expireAfter": "720h | Never"}),
     "NodePool \"web\": spec.template.spec.expireAfter: '720h | Never' does not match '^(([0-9]+(s|m|h))+|Never)$'"),
    ("schema: pattern with Go semantics ($ is the end)", pool(template_spec={"nodeClassRef": {**REF, "group": "karpenter.k8s.aws/v1"}}),
     "NodePool \"web\": spec.template.spec.nodeClassRef.group: 'karpenter.k8s.aws/v1' does not match '^[^/]*$'"),
    ("schema: enum", pool(disruption={"consolidateAfter": "0s", "consolidationPolicy": "WhenIdle"}),
     "NodePool \"web\": spec.disruption.consolidationPolicy: 'WhenIdle' is not one of "
     "['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']"),
    ("schema: type", nodeclass(kubelet={"maxPods": "many"}),
     "EC2NodeClass \"default\": spec.kubelet.maxPods: 'many' is not of type 'integer'"),
    ("metadata: name", pool(name="Web_Pool"), "NodePool \"Web_Pool\": metadata.name: 'Web_Pool' is not a DNS-1123 subdomain"),
    ("CEL: role with instanceProfile", nodeclass(instanceProfile="KarpenterNodeInstanceProfile"),
     "EC2NodeClass \"default\": spec: must specify exactly one of ['role', 'instanceProfile']"),
    ("CEL: regex find (restricted domain)", pool(template_metadata={"labels": {"karpenter.sh/team": "a"}}),
     'NodePool "web": spec.template.metadata.labels: label domain "karpenter.sh" is restricted'),
    ("CEL: overlay price and adjustment", overlay(price="1", priceAdjustment="+10%"),
     "NodeOverlay \"gpu-price\": spec: cannot set both 'price' and 'priceAdjustment'"),
    ("CEL: claim requirement", nodeclaim(requirements=[requirement("kubernetes.io/hostname", "In", "a")]),
     'NodeClaim "web-abc": spec.requirements[0].key: label "kubernetes.io/hostname" is restricted'),
    ("runtime: requirement value", pool(template_spec={"requirements": [requirement("team", "In", "a b")]}),
     "NodePool \"web\": spec.template.spec.requirements[0].values: invalid value for key team: 'a b' is not a valid "
     "label value: at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"),
    ("CEL: Gt takes one integer", pool(template_spec={"requirements": [requirement("karpenter.k8s.aws/instance-cpu",
                                                                                   "Gt", "four")]}),
     "NodePool \"web\": spec.template.spec.requirements: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have "
     "a single positive integer value"),
    ("CEL: restricted per release", pool(template_spec={"requirements": [requirement("karpenter.k8s.aws/nitro-sandbox",
                                                                                     "In", "true")]}),
     'NodePool "web": spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" is restricted'),
    ("runtime: kubelet refuses the label", pool(template_metadata={"labels": {"kubernetes.io/role": "web"}}),
     "NodePool \"web\": spec.template.metadata.labels.kubernetes.io/role: label 'kubernetes.io/role' is in the "
     "kubernetes.io/k8s.io domain, which kubelet refuses as a node label (only its well-known labels and the "
     "node.kubernetes.io and kubelet.kubernetes.io namespaces)"),
    ("runtime: duplicate taint", pool(template_spec={"taints": [{"key": "a", "effect": "NoSchedule"}],
                                                     "startupTaints": [{"key": "a", "effect": "NoSchedule"}]}),
     'NodePool "web": spec.template.spec.startupTaints[0]: duplicate taint Key/Effect pair a=NoSchedule'),
    ("runtime: budget schedule", pool(disruption={"consolidateAfter": "0s", "budgets": [
        {"nodes": "0", "schedule": "0 25 * * *", "duration": "1h"}]}),
     "NodePool \"web\": spec.disruption.budgets[0].schedule: '0 25 * * *' is not a cron schedule Karpenter can parse: "
     "hour: '25' is outside 0-23"),
    ("runtime: alias version", nodeclass(amiSelectorTerms=[{"alias": "al2@lates"}]),
     "EC2NodeClass \"default\": spec.amiSelectorTerms[0].alias: 'al2@lates': version 'lates' names no AMI release, so "
     "Karpenter resolves no AMI and the EC2NodeClass never becomes ready (use 'latest' or a release such as v20251117)"),
    ("old API version", {**pool(), "apiVersion": "karpenter.sh/v1beta1"},
     "NodePool \"web\": apiVersion: karpenter.sh/v1beta1 NodePool is not served by Karpenter 1.14.1 (it serves "
     "karpenter.sh/v1); convert it to v1 with the importer: python -m offline.importer --dry-run ..."),
]

# The real inputs that showed the disagreement (SOURCES.md), with the validator's first words.
REAL = [
    ("realworld2/corpus/sunny-fffff__emr-eks-karpenter-kyuubi/karpenter-emr-nodepool.yaml", 0,
     "NodePool \"emr\": apiVersion: karpenter.sh/v1beta1 NodePool is not served by Karpenter 1.14.1"),
    ("realworld2/corpus/sunny-fffff__emr-eks-karpenter-kyuubi/karpenter-emr-nodepool.yaml", 1,
     "EC2NodeClass \"emr\": apiVersion: karpenter.k8s.aws/v1beta1 EC2NodeClass is not served by Karpenter 1.14.1"),
    ("realworld2/corpus/jansony1__Karpenter-SGP-maxPods/nodepool-production.yaml", 0,
     'NodePool "mixed-deployment-nodepool": spec.template.spec.nodeClassRef.group: Required value'),
    ("realworld2/corpus/awslabs__data-on-eks/nodepool-local-provisioner.yaml", 0,
     'NodePool "ephemeral-nvme-local-provisioner": spec.template.spec.kubelet: unknown field'),
    ("realworld2/corpus/jansony1__Karpenter-SGP-maxPods/ec2nodeclass-production.yaml", 0,
     "EC2NodeClass \"mixed-deployment-nodeclass\": spec.amiSelectorTerms[0].alias: 'al2@lates': version 'lates'"),
    ("realworld2/corpus/aws__karpenter-provider-aws/docs-nodepools-reference.yaml", 0,
     "NodePool \"default\": spec.disruption.consolidateAfter: '1m | Never' does not match"),
    ("import_corpus/examples-v1/windows-custom-userdata.yaml", 0,
     "NodePool \"windows2022\": spec.template.spec.nodeClassRef.group: 'karpenter.k8s.aws/v1' does not match"),
]


def _karpenter_objects(path: Path) -> list[dict]:
    try:
        documents = [d.value for d in load_yaml_files(path, str(path))]
    except UnsafeInput:
        return []
    found = []
    for doc in documents:
        items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
        found += [o for o in items or [] if is_karpenter_object(o)]
    return found


def _shared_corpus() -> list[tuple[str, dict]]:
    folders = [SHARED_DIR / "realworld2" / "corpus", SHARED_DIR / "import_corpus" / "examples-v1"]
    if not all(f.is_dir() for f in folders):
        return []
    return [(f"{path.relative_to(SHARED_DIR)}#{i}", obj) for folder in folders for path in sorted(folder.rglob("*"))
            if path.is_file() for i, obj in enumerate(_karpenter_objects(path))]


CORPUS = [(name, obj) for name, obj, _ in SYNTHETIC] + _shared_corpus()


def _first_words(obj: dict) -> str | None:
    errors = validate(obj, origin="case.yaml")
    return errors[0].words if errors else None


# --- the validator itself ----------------------------------------------------------------------

@pytest.mark.parametrize("name, obj, expected", SYNTHETIC, ids=[c[0] for c in SYNTHETIC])
def test_validator_judges_each_rule_family_in_its_words(name, obj, expected):
    assert _first_words(obj) == expected


@pytest.mark.parametrize("relative, index, expected", REAL, ids=[f"{r[0].rsplit('/', 1)[-1]}#{r[1]}" for r in REAL])
def test_validator_refuses_the_real_inputs_the_tools_disagreed_on(relative, index, expected):
    path = SHARED_DIR / relative
    if not path.is_file():
        pytest.skip(f"{path} not present (../shared/ is only beside the repository in CI and dev sessions)")
    words = _first_words(_karpenter_objects(path)[index])
    assert words is not None and words.startswith(expected)


def test_shared_corpus_is_judged_without_a_crash():
    if not _shared_corpus():
        pytest.skip(f"{SHARED_DIR} not present")
    judged = [(name, _first_words(obj)) for name, obj in _shared_corpus()]
    assert len(judged) > 50
    assert sum(words is None for _, words in judged) > 30  # most published objects are valid


# --- every entry point agrees --------------------------------------------------------------------

def _write(tmp_path: Path, obj: dict) -> str:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return str(path)


def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def _importer(obj: dict) -> list[str]:
    result = import_documents([Document("case.yaml", "document 1", copy.deepcopy(obj))], "web")
    return [str(e) for e in result.errors]


def _advisor(obj: dict) -> str | None:
    try:
        core.validate(copy.deepcopy(obj))
    except InputError as err:
        return str(err)
    return None


def _policy(obj: dict) -> str | None:
    try:
        catalog.judge(obj)
    except catalog.InvalidObject as err:
        return str(err)
    return None


def _pr_report(obj: dict) -> str | None:
    return plan_of([copy.deepcopy(obj)], ["case.yaml:1 (document 1)"]).error


@pytest.mark.parametrize("name, obj", CORPUS, ids=[c[0] for c in CORPUS])
def test_every_tool_gives_the_validators_verdict_in_its_words(tmp_path, capsys, name, obj):
    words = _first_words(obj)
    label = words.split(":", 1)[0] if words else None
    path = _write(tmp_path, obj)
    old_api = words is not None and ": apiVersion: " in words

    # provisioner commands: exit 2 naming file, object, key path and the words; nothing else refuses
    for argv in (["simulate", "-f", path], ["tune", "-f", path], ["consolidate", "-f", path],
                 ["drift", "--before", path, "--after", path]):
        code, err = _cli(capsys, *argv)
        if words is None:  # tune may still have nothing to tune: no error names the object
            assert f"{_label(obj)}:" not in err, (argv[0], err)
        else:
            assert code == 2 and err.startswith(f"error: {path}:1 (document 1): {words}"), (argv[0], err)

    # the advisor's core (objects from the API), the policy pack, the pr-report's plan
    for tool, found in (("advisor", _advisor(obj)), ("policy", _policy(obj)), ("pr-report", _pr_report(obj))):
        if words is None:
            assert found is None or label is None or not found.startswith(label), (tool, found)
        else:
            assert found is not None and found.endswith(words), (tool, found)

    # the importer (NodePools and EC2NodeClasses; an old API version is its own conversion's input)
    if obj.get("kind") in ("NodePool", "EC2NodeClass") and not old_api:
        errors = _importer(obj)
        if words is None:
            assert not any(f"document 1: {(_label(obj))}:" in e for e in errors), errors
        else:
            assert f"case.yaml: document 1: {words}" in errors


def _label(obj: dict) -> str:
    return f'{obj.get("kind")} "{(obj.get("metadata") or {}).get("name")}"'


def test_policy_pack_reports_an_invalid_pool_in_the_validators_words():
    invalid = pool("web-api", template_spec={"kubelet": {"maxPods": 10}})
    [message] = messages("nodepool-has-instance-types",
                         [resource("kubernetes:karpenter.sh/v1:NodePool", "nodepool-web-api", invalid),
                          resource("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "nodeclass-default", nodeclass())])
    assert message == ("NodePool web-api is not a valid Karpenter NodePool: " + _first_words(invalid))


def test_skip_invalid_lists_each_ignored_object_with_its_reason_and_plans_the_rest(tmp_path, capsys):
    """A cluster dump holding stale objects: `--skip-invalid` plans from the valid ones and says
    which it ignored and why, on all four commands."""
    stale = {**pool("old"), "apiVersion": "karpenter.sh/v1beta1"}
    broken = nodeclass("broken", instanceProfile="p")
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump_all([pool(), nodeclass(), stale, broken], sort_keys=False))
    for argv in (["simulate", "-f", str(path)], ["tune", "-f", str(path)], ["consolidate", "-f", str(path)],
                 ["drift", "--before", str(path), "--after", str(path)]):
        code, err = _cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "(and 1 more error(s))" in err
        code, err = _cli(capsys, *argv, "--skip-invalid")
        assert code == 0, err
        for obj, line in ((stale, 3), (broken, 4)):
            reason = f"{path}:{_line(path, line)} (document {line}): {_first_words(obj)}"
            assert f"warning: skipped invalid object (--skip-invalid): {reason}" in err, (argv[0], err)


def _line(path: Path, document: int) -> int:
    """The line where document `document` (1-based) starts, as the bounded reader reports it."""
    return [d.line for d in load_yaml_files(path, str(path))][document - 1]
