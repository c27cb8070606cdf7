"""The project's per-release Karpenter data (components/reference/): generated from the upstream
files with provenance, up to date, and read by the IAM and interruption builders per release."""

import hashlib
import json
import shutil

import pytest

from components import iam, interruption, reference
from components.reference import cfn, generate
from tests import upstream_versions as up
from tests.harness import shared

SCOPE = iam.Scope("aws", "eu-west-1", "123456789012", "acme")
ROLE = "arn:aws:iam::123456789012:role/KarpenterNodeRole-acme"
QUEUE = "arn:aws:sqs:eu-west-1:123456789012:acme"
VALUES = {"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", "ClusterName": "acme",
          "KarpenterNodeRole.Arn": ROLE, "KarpenterInterruptionQueue.Arn": QUEUE}


@pytest.mark.slow
def test_committed_data_equals_a_fresh_generation_from_the_upstream_files(tmp_path):
    """`make reference` output is committed; regenerating from ../shared must change nothing."""
    source = shared("reference/karpenter-versions")
    generate.generate(source, tmp_path / "data", tmp_path / "crds")
    for fresh, kept in ((tmp_path / "data", reference.DATA_DIR), (tmp_path / "crds", generate.CRDS_DIR)):
        committed = sorted(p.name for p in kept.iterdir())
        assert sorted(p.name for p in fresh.iterdir()) == committed
        for name in committed:
            assert (fresh / name).read_text() == (kept / name).read_text(), f"{kept / name} is stale: run make reference"


def test_supported_versions_are_the_five_upstream_folders_newest_last():
    assert reference.supported() == up.VERSIONS
    assert reference.newest() == "1.14.1"


@pytest.mark.parametrize("version", up.VERSIONS)
def test_provenance_names_each_upstream_file_with_its_sha256(version):
    origin = reference.release(version).provenance
    for local, entry in origin["files"].items():
        data = (up.folder(version) / local).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["repo"] == "aws/karpenter-provider-aws" and len(entry["commit"]) == 40
    assert origin["tag"] == f"v{version}"


def test_generator_refuses_a_file_whose_sha256_differs_from_version_txt(tmp_path, capsys):
    source = tmp_path / "src"
    shutil.copytree(shared("reference/karpenter-versions/1.13.1"), source / "1.13.1")
    (source / "1.13.1" / "chart-values.yaml").chmod(0o644)
    with (source / "1.13.1" / "chart-values.yaml").open("a") as f:
        f.write("# edited\n")
    assert generate.main(["--from", str(source), "--out", str(tmp_path / "out")]) == 2
    assert "sha256" in capsys.readouterr().err
    assert not (tmp_path / "out" / "1.13.1.json").exists()


def test_data_stays_small():
    total = sum(p.stat().st_size for p in reference.DATA_DIR.iterdir())
    assert 100_000 < total < 2_000_000, total


def test_cfn_loader_keeps_intrinsics_and_substitutes_at_render_time():
    doc = cfn.load_template('a: !Sub "arn:${AWS::Partition}:x:${ClusterName}"\nb: !GetAtt Q.Arn\nc: !Ref Q\n')
    assert doc["a"] == cfn.Intrinsic("Sub", "arn:${AWS::Partition}:x:${ClusterName}")
    plain = cfn.as_placeholders(doc)
    assert plain == {"a": "arn:${AWS::Partition}:x:${ClusterName}", "b": "${Q.Arn}", "c": "${Q}"}
    assert cfn.substitute(plain, {"AWS::Partition": "aws-cn", "ClusterName": "c1", "Q.Arn": "arn:q", "Q": "q"}) == \
        {"a": "arn:aws-cn:x:c1", "b": "arn:q", "c": "q"}


def test_substitute_refuses_a_placeholder_without_value():
    with pytest.raises(KeyError, match="AWS::Region"):
        cfn.substitute({"Resource": "arn:${AWS::Region}"}, {})


def test_cfn_loader_refuses_intrinsics_it_does_not_understand():
    with pytest.raises(ValueError, match="Join"):
        cfn.as_placeholders(cfn.load_template("a: !Join ['', [x, y]]"))


def test_unsupported_version_names_every_supported_one():
    with pytest.raises(reference.UnsupportedVersion, match="1.10.2, 1.11.3, 1.12.2, 1.13.1, 1.14.1"):
        reference.release("1.9.0")


@pytest.mark.parametrize("version", up.VERSIONS)
def test_controller_policies_equal_the_releases_template_statement_by_statement(version):
    """aws/karpenter-provider-aws website/content/en/v1.x/getting-started/.../cloudformation.yaml."""
    expected = {key: [iam.normalised(s) for s in cfn.substitute(statements, VALUES)]
                for key, statements in up.controller_policies(version).items()}
    built = iam.controller_policies(SCOPE, node_role_arn=ROLE, queue_arn=QUEUE, version=version)
    assert list(built) == list(expected)
    assert {key: doc["Statement"] for key, doc in built.items()} == expected


@pytest.mark.parametrize("version,policies,statements", [
    ("1.10.2", 5, 17), ("1.11.3", 5, 17), ("1.12.2", 6, 18), ("1.13.1", 6, 18), ("1.14.1", 6, 18)])
def test_policy_and_statement_counts_per_release(version, policies, statements):
    built = iam.controller_policies(SCOPE, node_role_arn=ROLE, queue_arn=QUEUE, version=version)
    assert (len(built), sum(len(d["Statement"]) for d in built.values())) == (policies, statements)
    assert ("ZonalShift" in built) == (reference.order(version) >= (1, 12))


def test_placement_group_permissions_appear_in_1_11():
    old = iam.node_lifecycle_statements(SCOPE, version="1.10.2")[0]["Resource"]
    new = iam.node_lifecycle_statements(SCOPE, version="1.11.3")[0]["Resource"]
    assert set(new) - set(old) == {"arn:aws:ec2:eu-west-1:*:placement-group/*"}
    assert "ec2:DescribePlacementGroups" not in iam.resource_discovery_statements(SCOPE, version="1.10.2")[0]["Action"]
    assert "ec2:DescribePlacementGroups" in iam.resource_discovery_statements(SCOPE, version="1.11.3")[0]["Action"]


@pytest.mark.parametrize("version", up.VERSIONS)
def test_node_role_and_event_rules_per_release_equal_upstream(version):
    resources = up.template(version)["Resources"]
    arns = resources["KarpenterNodeRole"]["Properties"]["ManagedPolicyArns"]
    assert sorted(iam.node_managed_policy_arns("aws", version).values()) == sorted(a.replace("${AWS::Partition}", "aws") for a in arns)
    assert [r.event_pattern() for r in interruption.rules(version)] == up.event_patterns(version)
    policy = interruption.queue_policy(QUEUE, version)
    assert [s["Effect"] for s in policy["Statement"]] == ["Allow", "Deny"]
    assert json.dumps(policy).count(QUEUE) == 2


@pytest.mark.parametrize("version", up.VERSIONS)
def test_chart_defaults_and_crds_per_release_equal_upstream(version):
    data = reference.release(version)
    assert data.chart_defaults("karpenter") == up.chart_defaults(version)
    assert set(data.crds) == up.crd_stems(version)
    schema = data.crds["karpenter.sh_nodepools"]["versions"][0]["schema"]
    expected = up.crd_schema(version, "karpenter.sh_nodepools")
    assert schema["properties"]["spec"]["required"] == expected["properties"]["spec"]["required"]
    assert "description" not in schema["properties"]["spec"]
    assert data.enums["karpenter.sh_nodepools:spec.disruption.consolidationPolicy"] == \
        expected["properties"]["spec"]["properties"]["disruption"]["properties"]["consolidationPolicy"]["enum"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NAMES = ["AWS::Partition", "AWS::Region", "ClusterName", "KarpenterNodeRole.Arn"]
_text = st.text(alphabet=st.characters(blacklist_characters="${}", blacklist_categories=("Cs",)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(_text, st.sampled_from(NAMES).map(lambda n: "${" + n + "}")), max_size=6),
       st.fixed_dictionaries(dict.fromkeys(NAMES, _text)))
def test_substitute_fills_every_placeholder_and_nothing_else(parts, values):
    text = "".join(parts)
    result = cfn.substitute({"k": [text]}, values)["k"][0]
    assert "${" not in result
    assert result == "".join(values[p[2:-1]] if p.startswith("${") and p[2:-1] in values else p for p in parts)
