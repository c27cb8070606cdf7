"""pkg/scheduling requirement(s)_test.go behaviours, plus quantities."""
import pytest

from kubefacts import quantity
from kubefacts.labels import WELL_KNOWN_LABELS
from provisioner.scheduling.requirements import Requirement, Requirements

R = Requirement.of


def test_requirement_in_intersection_keeps_common_values():
    assert R("k", "In", ["a", "b"]).intersection(R("k", "In", ["b", "c"])) == R("k", "In", ["b"])


def test_requirement_not_in_intersection_unions_exclusions():
    merged = R("k", "NotIn", ["a"]).intersection(R("k", "NotIn", ["b"]))
    assert merged.operator() == "NotIn" and merged.values == frozenset({"a", "b"})


def test_requirement_in_and_not_in_intersection_subtracts():
    assert R("k", "In", ["a", "b"]).intersection(R("k", "NotIn", ["a"])) == R("k", "In", ["b"])


def test_requirement_gt_converts_to_inclusive_lower_bound():
    gt = R("k", "Gt", ["5"])
    assert (gt.has("6"), gt.has("5"), gt.has("x")) == (True, False, False)


def test_requirement_lt_converts_to_inclusive_upper_bound():
    lt = R("k", "Lt", ["5"])
    assert (lt.has("4"), lt.has("5")) == (True, False)


def test_requirement_gt_and_lt_without_overlap_becomes_does_not_exist():
    merged = R("k", "Gt", ["5"]).intersection(R("k", "Lt", ["5"]))
    assert merged.operator() == "DoesNotExist"


def test_requirement_bounds_filter_concrete_values():
    merged = R("k", "In", ["2", "8", "x"]).intersection(R("k", "Gt", ["4"]))
    assert merged == R("k", "In", ["8"])


def test_requirement_exists_and_does_not_exist_have_no_intersection():
    assert not R("k", "Exists").has_intersection(R("k", "DoesNotExist"))


def test_requirement_unknown_operator_raises():
    with pytest.raises(ValueError, match="unknown operator 'Equals'"):
        R("k", "Equals", ["a"])


def test_requirement_beta_labels_are_normalized():
    assert R("failure-domain.beta.kubernetes.io/zone", "In", ["z"]).key == "topology.kubernetes.io/zone"


def test_requirements_compatible_rejects_undefined_custom_label():
    err = Requirements().compatible(Requirements([R("team", "In", ["web"])]), WELL_KNOWN_LABELS)
    assert err == 'label "team" does not have known values'


def test_requirements_compatible_allows_undefined_well_known_label():
    reqs = Requirements([R("kubernetes.io/arch", "In", ["arm64"])])
    assert Requirements().compatible(reqs, WELL_KNOWN_LABELS) is None


def test_requirements_compatible_allows_not_in_for_undefined_custom_label():
    assert Requirements().compatible(Requirements([R("team", "NotIn", ["web"])])) is None


def test_requirements_compatible_allows_does_not_exist_for_undefined_custom_label():
    assert Requirements().compatible(Requirements([R("team", "DoesNotExist")])) is None


def test_requirements_intersects_reports_conflicting_key():
    mine = Requirements([R("team", "In", ["web"])])
    err = mine.intersects(Requirements([R("team", "In", ["batch"])]))
    assert err == "key team, team In [batch] not in team In [web]"


def test_requirements_intersects_accepts_two_negative_operators_without_overlap():
    mine = Requirements([R("k", "DoesNotExist")])
    assert mine.intersects(Requirements([R("k", "NotIn", ["a"])])) is None


def test_requirements_add_intersects_same_key():
    reqs = Requirements([R("k", "In", ["a", "b"])])
    reqs.add(R("k", "In", ["b"]))
    assert reqs.get("k") == R("k", "In", ["b"])


def test_requirements_min_values_take_the_larger():
    merged = R("k", "Exists", min_values=2).intersection(R("k", "In", ["a", "b", "c"], min_values=3))
    assert merged.min_values == 3


def test_requirements_hint_names_a_likely_typo():
    reqs = Requirements([R("karpenter-platform.io/team", "In", ["web"])])
    err = reqs.compatible(Requirements([R("platform.example.com/team", "In", ["web"])]))
    assert 'typo of "karpenter-platform.io/team"' in err


@pytest.mark.parametrize("text,milli", [("100m", 100), ("1", 1000), ("1.5", 1500), ("1Gi", 2**30 * 1000),
                                        ("512Mi", 512 * 2**20 * 1000), ("1e3", 10**6), ("2k", 2 * 10**6),
                                        (3, 3000), ("0.1m", 1)])
def test_quantity_parse_gives_exact_milli_units(text, milli):
    assert quantity.milli(text) == milli


def test_quantity_parse_rejects_garbage():
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        quantity.milli("lots")


@pytest.mark.parametrize("name,milli,text", [("cpu", 1500, "1500m"), ("cpu", 2000, "2"),
                                             ("memory", 2**30 * 1000, "1Gi"), ("memory", 1536 * 2**20 * 1000, "1536Mi"),
                                             ("pods", 29000, "29")])
def test_quantity_format_is_shortest_exact_form(name, milli, text):
    assert quantity.format_quantity(name, milli) == text
