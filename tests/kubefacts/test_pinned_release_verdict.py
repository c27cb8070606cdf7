"""A stack is judged by the Karpenter release it pins (karpenter.version, the karpenter chart's
version), in the policy pack as in the config loader and the render's checks (offline.checks).

The object that tells releases apart: a NodePool requirement on `karpenter.k8s.aws/placement-group-id`.
aws/karpenter-provider-aws registers it as well-known from v1.11 (pkg/apis/v1/labels.go at v1.11.3
lists LabelPlacementGroupID; v1.10.2 does not), and the NodePool CRD's CEL rule on requirement keys
in the karpenter.k8s.aws domain (pkg/apis/crds/karpenter.sh_nodepools.yaml) admits it from v1.11.3
only: Karpenter 1.10.2 refuses the pool, 1.11.3 and later accept it.
"""
from __future__ import annotations

import pytest

from components.config import ConfigError
from kubefacts import labels as L
from kubefacts.validation import validate
from provisioner.cli import main
from tests.harness import MINIMAL_POOL, platform_from
from tests.kubefacts.test_one_verdict import nodeclass, pool, requirement
from tests.policies.analyzer import messages, resource

PLACEMENT = requirement("karpenter.k8s.aws/placement-group-id", "DoesNotExist")
WORDS_1_10 = 'NodePool "web-api": spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" is restricted'


def _stack(version: str | None) -> list[dict]:
    found = [resource("kubernetes:karpenter.sh/v1:NodePool", "nodepool-web-api",
                      pool("web-api", template_spec={"requirements": [PLACEMENT]})),
             resource("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "nodeclass-default", nodeclass())]
    if version is not None:
        found.append(resource("kubernetes:helm.sh/v3:Release", "karpenter-controller",
                              {"chart": "oci://public.ecr.aws/karpenter/karpenter", "version": version, "name": "karpenter"}))
    return found


@pytest.mark.parametrize("release, words", [("1.10.2", [WORDS_1_10]), ("1.11.3", []), ("1.14.1", [])])
def test_validator_tells_the_releases_apart(release, words):
    obj = pool("web-api", template_spec={"requirements": [PLACEMENT]})
    assert [e.words for e in validate(obj, release=release)] == words


@pytest.mark.parametrize("version, expected", [
    ("1.10.2", ["NodePool web-api is not a valid Karpenter NodePool: " + WORDS_1_10]),
    ("v1.10.2", ["NodePool web-api is not a valid Karpenter NodePool: " + WORDS_1_10]),
    ("1.11.3", []), ("1.14.1", []),
    (None, []),  # no karpenter release in the stack: the newest supported release
])
def test_policy_pack_judges_a_pool_by_the_stacks_pinned_release(version, expected):
    assert messages("nodepool-has-instance-types", _stack(version)) == expected


@pytest.mark.parametrize("version, refused", [("1.10.2", True), ("1.14.1", False)])
def test_config_loader_judges_a_team_pool_by_the_pinned_release_alike(version, refused):
    team = {"nodePools": [{**MINIMAL_POOL, "name": "api", "requirements": [PLACEMENT]}]}
    if not refused:
        platform_from({"karpenter": {"version": version}}, {"web": team})
        return
    with pytest.raises(ConfigError) as err:
        platform_from({"karpenter": {"version": version}}, {"web": team})
    [issue] = [str(i) for i in err.value.issues]
    assert issue.startswith("stacks/teams/web.yaml: nodePools[0].requirements[0].key: not supported by Karpenter 1.10.2")
    assert 'label domain "karpenter.k8s.aws" is restricted' in issue


def test_config_models_label_checks_refuse_nothing_an_older_release_accepts():
    """The team file's models check keys with restricted_label of the newest release (they run
    before the stack's version is known); the pinned release's own refusals come from the version
    gate (components.versions) in its words. That is exact only while every release's well-known
    labels are among the newest's: were one dropped, the models would need the pinned release."""
    newest = L.well_known(L.SUPPORTED_RELEASES[-1])
    for release in L.SUPPORTED_RELEASES:
        assert L.well_known(release) <= newest, release
        assert L.NORMALIZED_BY_RELEASE[release].items() <= L.NORMALIZED_BY_RELEASE[L.DEFAULT_RELEASE].items()


def test_provisioner_commands_without_a_stack_judge_by_the_newest_release(tmp_path, capsys):
    """simulate/tune/drift/consolidate read bare manifests (no pinned version): they model and
    judge Karpenter 1.14.1 (kubefacts.labels.DEFAULT_RELEASE)."""
    import yaml

    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump_all([pool("web-api", template_spec={"requirements": [PLACEMENT]}), nodeclass()]))
    assert L.DEFAULT_RELEASE == "1.14.1"
    assert main(["simulate", "-f", str(path)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("version, priced", [("1.10.2", False), ("1.14.1", True)])
def test_cost_policies_price_only_a_pool_the_pinned_release_accepts(version, priced):
    """team-budget's worst case (policies.cost.pool_worst_case) skips a pool the pinned release refuses."""
    from policies.cost import pool_worst_case
    from policies.model import Resource, Stack

    stack = Stack("prod", tuple(Resource(r["type"], r["name"], r["urn"], r["props"]) for r in _stack(version)))
    [nodepool] = stack.of_type("kubernetes:karpenter.sh/v1:NodePool")
    nodepool.props["spec"]["limits"] = {"cpu": "64", "memory": "256Gi"}
    assert (pool_worst_case(stack, nodepool) is not None) is priced
