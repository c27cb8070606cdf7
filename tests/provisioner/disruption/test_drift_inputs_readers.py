"""provisioner.disruption.drift_inputs: the readers share one name check and one refusal of twins;
the snapshot's nodes are read by the one cluster reader (provisioner.state.reader.load_cluster)."""
from __future__ import annotations

import pytest

from provisioner.disruption.drift import drift
from provisioner.disruption.drift_inputs import read_manifests, read_nodeclass, read_nodepool
from provisioner.errors import InputError


@pytest.mark.parametrize("reader, kind", [(read_nodepool, "NodePool"), (read_nodeclass, "EC2NodeClass")])
@pytest.mark.parametrize("metadata", [None, {}, {"name": ""}, {"name": 3}])
def test_reader_without_a_name_says_missing_metadata_name(reader, kind, metadata):
    with pytest.raises(InputError) as err:
        reader({"kind": kind, "metadata": metadata}, "a.yaml")
    assert (str(err.value), err.value.path, err.value.origin) == (
        f'a.yaml: {kind} "(unnamed)": metadata.name: missing', "metadata.name", "a.yaml")


def test_snapshot_node_without_a_name_says_missing_metadata_name():
    with pytest.raises(InputError) as err:
        drift([], [], [{"apiVersion": "v1", "kind": "Node", "metadata": {}}], snapshot_origins=["snap.yaml"])
    assert (err.value.path, err.value.origin) == ("metadata.name", "snap.yaml") and "Node" in str(err.value)


@pytest.mark.parametrize("kind, api", [("NodePool", "karpenter.sh/v1"), ("EC2NodeClass", "karpenter.k8s.aws/v1")])
def test_manifests_defining_a_name_twice_are_refused_naming_the_kind(kind, api):
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x"}}
    with pytest.raises(InputError) as err:
        read_manifests([obj, obj], ["a.yaml", "b.yaml"])
    assert f'{kind} "x"' in str(err.value) and "defined twice" in str(err.value) and err.value.origin == "b.yaml"


def test_manifests_pass_over_kinds_that_are_not_strings():
    assert read_manifests([{"kind": ["NodePool"]}, {"kind": None}]) == ({}, {})
