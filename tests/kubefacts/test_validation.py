"""kubefacts.validation: whatever a file or an API server hands it, the validator answers with a
list of located refusals, never a traceback; its CRD data is the project's, per release."""
from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubefacts.labels import SUPPORTED_RELEASES
from kubefacts.validation import InvalidObject, validate
from kubefacts.validation.crds import release_crds, releases

_JUNK = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
                     | st.text(max_size=6), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)

_BASES = [
    {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "a", "labels": {"x": "y"}},
     "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {
         "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
         "requirements": [{"key": "a", "operator": "In", "values": ["b"], "minValues": 1}],
         "taints": [{"key": "k", "effect": "NoSchedule"}]}},
              "disruption": {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily", "duration": "1h"}]}}},
    {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "d"},
     "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}], "subnetSelectorTerms": [{"id": "subnet-1"}],
              "securityGroupSelectorTerms": [{"id": "sg-1"}], "kubelet": {"maxPods": 3}}},
    {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "o"},
     "spec": {"requirements": [{"key": "a", "operator": "In", "values": ["b"]}], "price": "1"}},
    {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
     "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}, "requirements": []}},
]


# cel-python raises the interpreter's recursion limit when it first compiles a rule; do that
# before hypothesis runs (it warns about a limit changed under it).
for _base in _BASES:
    validate(_base)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths(sub, (*path, key))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield from _paths(sub, (*path, index))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_damaged_object_gets_located_refusals_never_a_crash(data):
    obj = copy.deepcopy(data.draw(st.sampled_from(_BASES)))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(obj))[1:]))
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = data.draw(_JUNK)
    errors = validate(obj, release=data.draw(st.sampled_from(SUPPORTED_RELEASES)), origin="f.yaml")
    assert all(isinstance(e, InvalidObject) and e.message and e.obj for e in errors)


def test_the_undamaged_objects_are_valid_in_every_release():
    for release in SUPPORTED_RELEASES:
        assert [e.words for base in _BASES for e in validate(base, release=release)] == []


def test_every_supported_release_has_its_crds_beside_the_validator():
    assert releases() == SUPPORTED_RELEASES
    for release in releases():
        assert {"karpenter.sh_nodepools", "karpenter.sh_nodeclaims", "karpenter.k8s.aws_ec2nodeclasses",
                "karpenter.sh_nodeoverlays"} <= set(release_crds(release))


def test_objects_outside_karpenters_groups_are_not_judged():
    assert validate({"apiVersion": "v1", "kind": "Pod", "metadata": {}}) == []
    assert validate({"apiVersion": "apps/v1", "kind": "Deployment", "spec": 3}) == []
