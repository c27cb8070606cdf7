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
    """The CRD's rule bounds minValues by the values under In; Exists may carry it (issue 11), and
    DoesNotExist leaves no value to count."""
    with pytest.raises(ValidationError, match="minValues 2 needs at least that many values with operator In"):
        ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                          "values": ["m5"], "minValues": 2})
    with pytest.raises(ValidationError, match="minValues cannot be met with operator DoesNotExist"):
        ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "DoesNotExist",
                                          "minValues": 1})
    exists = ConfigRequirement.model_validate({"key": "karpenter.k8s.aws/instance-family", "operator": "Exists",
                                               "minValues": 3})
    assert exists.min_values == 3
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


# --- provisioner/scheduling/requirements.py: survivors of the first `make mutation` run --------

from provisioner.scheduling.requirements import Requirements  # noqa: E402


def test_exists_requirement_admits_any_value_and_counts_as_unbounded():
    exists = Requirement.exists(KEY)
    assert (exists.key, exists.complement, exists.values, exists.gte, exists.lte) == (KEY, True, frozenset(), None, None)
    assert exists.operator() == "Exists" and exists.has("anything")
    assert len(exists) == 2**63 - 1
    assert len(Requirement.of(KEY, "NotIn", ["a", "b"])) == 2**63 - 3
    assert len(Requirement.in_(KEY, "a", "b")) == 2


def test_any_picks_the_smallest_allowed_value_or_nothing():
    assert Requirement.in_(KEY, "c", "a", "b").any() == "a"
    assert Requirement.exists(KEY).any() == ""
    assert Requirement.of(KEY, "DoesNotExist").any() == ""


def test_equal_requirements_hash_alike_and_differing_bounds_do_not_compare_equal():
    assert hash(Requirement.of(KEY, "Gt", ["3"])) == hash(Requirement.of(KEY, "Gte", ["4"]))
    assert Requirement.of(KEY, "Gt", ["3"]) != Requirement.of(KEY, "Gt", ["4"])
    assert len({Requirement.in_(KEY, "a"), Requirement.in_(KEY, "a"), Requirement.in_(KEY, "b")}) == 2


def test_requirement_repr_names_operator_values_bounds_and_min_values():
    """The repr is what users read in 'why is my pod pending'."""
    assert repr(Requirement.exists(KEY)) == f"{KEY} Exists"
    assert repr(Requirement.of(KEY, "DoesNotExist")) == f"{KEY} DoesNotExist"
    assert repr(Requirement.of(KEY, "In", ["b", "a"], min_values=2)) == f"{KEY} In [a b] minValues 2"
    assert repr(Requirement.of(KEY, "NotIn", ["x"])) == f"{KEY} NotIn [x]"
    assert repr(Requirement.of(KEY, "Gt", ["3"])) == f"{KEY} Exists >=4"
    assert repr(Requirement.of(KEY, "Lt", ["3"])) == f"{KEY} Exists <=2"
    many = Requirement.of(KEY, "In", [str(i) for i in range(8)])
    assert repr(many) == f"{KEY} In [0 1 2 3 4 and 3 others]"


def test_requirements_equality_is_by_content():
    a = Requirements([Requirement.in_(KEY, "a")])
    assert a == Requirements([Requirement.in_(KEY, "a")])
    assert a != Requirements([Requirement.in_(KEY, "b")])
    assert a != {KEY: Requirement.in_(KEY, "a")}


def test_undefined_custom_label_is_incompatible_with_a_typo_hint_unless_allowed():
    node = Requirements([Requirement.in_("example.com/team", "a")])
    pod = Requirements([Requirement.in_("example.org/team", "a")])
    assert node.compatible(pod) == 'label "example.org/team" does not have known values (typo of "example.com/team"?)'
    assert not node.is_compatible(pod)
    assert node.is_compatible(pod, allow_undefined=frozenset({"example.org/team"}))
    plain = Requirements([Requirement.in_("color", "a")])
    assert plain.compatible(Requirements([Requirement.in_("shape", "a")])) == 'label "shape" does not have known values'


def test_requirements_repr_is_sorted_and_hides_restricted_labels():
    reqs = Requirements([Requirement.in_("b", "1"), Requirement.in_("a", "2"),
                         Requirement.in_("kubernetes.io/hostname", "h")])
    assert repr(reqs) == "a In [2], b In [1]"


def test_requirement_errors_name_the_operator_and_the_choices():
    with pytest.raises(ValueError) as unknown:
        Requirement.of(KEY, "Near", ["1"])
    assert str(unknown.value) == ("unknown operator 'Near' (expected one of DoesNotExist, Exists, Gt, Gte, In, Lt, "
                                  "Lte, NotIn)")
    with pytest.raises(ValueError, match=r"^operator Gt needs exactly one integer value, got \['1', '2'\]$"):
        Requirement.of(KEY, "Gt", ["1", "2"])
    with pytest.raises(ValueError, match=r"^operator Lt needs an integer value, got 'x'$"):
        Requirement.of(KEY, "Lt", ["x"])


def test_gt_max_int64_matches_nothing_and_one_below_matches_only_max():
    top = 2**63 - 1
    assert Requirement.of(KEY, "Gt", [str(top)]).operator() == "DoesNotExist"
    below = Requirement.of(KEY, "Gt", [str(top - 1)])
    assert below.has(str(top)) and not below.has(str(top - 1))


@pytest.mark.parametrize("operator,values", [("In", ["a", "b"]), ("NotIn", ["a"]), ("Exists", []),
                                             ("DoesNotExist", []), ("Gt", ["1"]), ("Lt", ["9"]),
                                             ("Gte", ["1"]), ("Lte", ["9"])])
def test_min_values_is_kept_by_every_operator(operator, values):
    assert Requirement.of(KEY, operator, values, min_values=2).min_values == 2
    assert Requirement.of(KEY, operator, values).key == KEY


def test_bounded_concrete_sets_admit_only_values_within_bounds():
    bounded = Requirement(KEY, False, frozenset({"1", "5", "x"}), gte=3)
    assert bounded.has("5") and not bounded.has("1") and not bounded.has("x")
    assert bounded.has_intersection(Requirement.in_(KEY, "5", "1"))
    assert not bounded.has_intersection(Requirement.in_(KEY, "1"))
    assert not Requirement.in_(KEY, "1").has_intersection(bounded)
    empty = Requirement.of(KEY, "Gt", ["5"]).intersection(Requirement.of(KEY, "Lt", ["3"]))
    assert (empty.key, empty.operator()) == (KEY, "DoesNotExist")
    kept = Requirement.of(KEY, "Gt", ["1"], min_values=2).intersection(Requirement.of(KEY, "Lt", ["9"]))
    assert (kept.key, kept.gte, kept.lte, kept.min_values) == (KEY, 2, 8, 2)


def test_repr_lists_five_values_in_full_and_cuts_from_six():
    five = Requirement.of(KEY, "In", [str(i) for i in range(5)])
    six = Requirement.of(KEY, "In", [str(i) for i in range(6)])
    assert repr(five) == f"{KEY} In [0 1 2 3 4]"
    assert repr(six) == f"{KEY} In [0 1 2 3 4 and 1 others]"


def test_upper_bounds_of_concrete_sets_are_honoured():
    capped = Requirement(KEY, False, frozenset({"1", "9"}), lte=5)
    assert capped.has("1") and not capped.has("9")
    assert capped.has_intersection(Requirement.in_(KEY, "1"))
    assert not capped.has_intersection(Requirement.in_(KEY, "9"))
    assert not Requirement.in_(KEY, "9").has_intersection(capped)


def test_impossible_requirements_keep_key_and_min_values():
    top = Requirement.of(KEY, "Gt", [str(2**63 - 1)], min_values=3)
    assert (top.key, top.complement, top.min_values) == (KEY, False, 3)
    empty = Requirement.of(KEY, "Gt", ["5"], min_values=2).intersection(Requirement.of(KEY, "Lt", ["3"]))
    assert empty.min_values == 2


def test_requirements_lookup_and_every_key_is_checked():
    reqs = Requirements([Requirement.in_("a", "1"), Requirement.in_("b", "2")])
    assert reqs.has("a") and not reqs.has("z")
    assert reqs.get("z") == Requirement("z", True) and reqs.get("z").key == "z"
    # The conflict is on the second key: checking must not stop after the first.
    incoming = Requirements([Requirement.in_("a", "1"), Requirement.in_("b", "3")])
    assert reqs.intersects(incoming) == "key b, b In [3] not in b In [2]"
    assert reqs.compatible(incoming) == "key b, b In [3] not in b In [2]"
    wider = Requirements([Requirement.in_("a", "1"), Requirement.in_("b", "3"), Requirement.in_("c", "1")])
    assert reqs.intersects(wider) == "key b, b In [3] not in b In [2]"
    negative = Requirements([Requirement.of("a", "NotIn", ["1"]), Requirement.in_("b", "3")])
    assert Requirements([Requirement.of("a", "DoesNotExist"), Requirement.in_("b", "2")]).intersects(negative) == \
        "key b, b In [3] not in b In [2]"
    undefined_first = Requirements([Requirement.of("x", "NotIn", ["1"]), Requirement.in_("y", "1")])
    assert reqs.compatible(undefined_first) == 'label "y" does not have known values'


@pytest.mark.parametrize("threshold,accepted", [("100Mi", True), ("0", True), ("10%", True), ("1.5%", True),
                                                ("100%", True), ("0%", True), ("100.5%", False), ("101%", False),
                                                ("-1", False), ("-5%", False), ("abc%", False), ("%", False),
                                                ("1.2.3%", False), ("1e1%", False), ("1_0%", False),
                                                ("lots", False), ("5e", False)])
def test_eviction_hard_thresholds_are_quantities_or_percentages(threshold, accepted):
    """kubelet's evictionHard values: a quantity or a percentage of at most 100 %."""
    from components.config.nodeclasses import Kubelet

    document = {"evictionHard": {"memory.available": threshold}}
    if accepted:
        assert Kubelet.model_validate(document).eviction_hard == {"memory.available": threshold}
    else:
        with pytest.raises(ValidationError, match="is not a threshold kubelet accepts"):
            Kubelet.model_validate(document)
