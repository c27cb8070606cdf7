"""Tests that kill the mutants issue 12 found surviving (an AST mutation run over the scheduling
core and the config models), each naming the behaviour it defends."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.config.nodepools import NodePool, Requirement as ConfigRequirement
from components.config.teams import Team
from components.nodepools import nodepool_manifest, nodepool_name
from provisioner.scheduling.requirements import Requirement

KEY = "example.com/gen"


def test_contradictory_gt_and_lt_bounds_do_not_intersect():
    """requirement.go HasIntersection: Gt 5 and Lt 3 leave no integer."""
    assert not Requirement.of(KEY, "Gt", ["5"]).has_intersection(Requirement.of(KEY, "Lt", ["3"]))
    assert not Requirement.of(KEY, "Gt", ["5"]).has_intersection(Requirement.of(KEY, "Lt", ["6"]))
    assert Requirement.of(KEY, "Gt", ["5"]).has_intersection(Requirement.of(KEY, "Lt", ["7"]))


def test_gte_and_lte_build_inclusive_bounds_not_none():
    gte, lte = Requirement.of(KEY, "Gte", ["4"]), Requirement.of(KEY, "Lte", ["4"])
    assert (gte.gte, gte.lte, lte.gte, lte.lte) == (4, None, None, 4)
    assert gte.has("4") and lte.has("4") and not gte.has("3") and not lte.has("5")


def test_min_values_needs_in_with_enough_values():
    with pytest.raises(ValidationError, match="minValues needs operator In"):
        ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                          "values": ["m5"], "minValues": 2})
    with pytest.raises(ValidationError, match="minValues needs operator In"):
        ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "Exists",
                                          "minValues": 1})
    ok = ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                           "values": ["m5", "c5"], "minValues": 2})
    assert ok.min_values == 2


def test_empty_limits_are_refused():
    with pytest.raises(ValidationError, match="needs limits"):
        NodePool.model_validate({"name": "pool", "limits": {}})


def test_nodepool_resource_name_is_team_dash_pool():
    """A renamed NodePool is a replaced NodePool on `pulumi up` (every node drained): pin the name."""
    pool = NodePool.model_validate({"name": "api", "limits": {"cpu": "10"}})
    team = Team(name="web", node_pools=[pool])
    assert nodepool_name(team, pool) == "web-api"
    assert nodepool_manifest(team, pool)["metadata"]["name"] == "web-api"


def test_nodepool_pulumi_resource_name_is_stable():
    """The Pulumi resource name is part of the URN: renaming it replaces every NodePool."""
    from components.nodepools import NodePools
    from tests.harness import MINIMAL_POOL, platform_from, run_component

    platform = platform_from(teams={"web": {"name": "web", "nodePools": [dict(MINIMAL_POOL)]}})
    capture = run_component(lambda: NodePools("node-pools", platform))
    pools = capture.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert [p.name for p in pools] == ["nodepool-web-pool"]
