"""load_cluster(facts=True): the one cluster model read from bare Nodes and NodeClaims (what drift
counts), as kubernetes-sigs/karpenter v1.14.1 pkg/controllers/state/cluster.go holds them:
UpdateNodeClaim keeps a launched NodeClaim (status.providerID) as a StateNode before its Node
registers, UpdateNode joins a Node to it by provider ID; pkg/controllers/state/statenode.go Name()
and Labels() are the NodeClaim's while no Node is registered.
"""
import pytest

from provisioner.errors import InputError
from provisioner.state.reader import load_cluster

POOL = "karpenter.sh/nodepool"


def node(name, provider=None, **meta):
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {POOL: "web"}, **meta}}
    if provider:
        obj["spec"] = {"providerID": provider}
    return obj


def nodeclaim(name, node_name=None, provider=None, launched=None, nodeclass="default"):
    status = {k: v for k, v in (("nodeName", node_name), ("providerID", provider)) if v}
    if launched is not None:
        status["conditions"] = [{"type": "Launched", "status": launched}]
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {POOL: "web", "team": "web"},
                         "annotations": {"karpenter.sh/nodepool-hash": "1"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass},
                     "requirements": []},
            "status": status}


def test_node_without_allocatable_is_refused_by_default_and_read_as_facts():
    """The scheduling view needs status.allocatable; the facts view (drift's) does not."""
    with pytest.raises(InputError, match="status.allocatable"):
        load_cluster([node("n1")])
    cluster = load_cluster([node("n1")], facts=True)
    assert cluster.inputs is None
    assert [(n.name, n.labels[POOL], n.node, n.claim.synthesized) for n in cluster.nodes] == [("n1", "web", None, True)]


def test_launched_nodeclaim_without_its_node_is_a_state_node_named_after_it():
    """cluster.go UpdateNodeClaim: a NodeClaim with a providerID is state before its Node exists;
    statenode.go Name()/Labels() are then the NodeClaim's."""
    cluster = load_cluster([nodeclaim("web-abc", provider="aws:///us-east-1a/i-1")], facts=True)
    [state] = cluster.nodes
    assert (state.name, state.labels["team"], state.meta, state.claim.launched, state.claim.nodeclass,
            state.claim.annotations) == ("web-abc", "web", None, True, "default", {"karpenter.sh/nodepool-hash": "1"})


@pytest.mark.parametrize("launched, provider, expected", [
    ("True", None, True), ("False", "aws:///x/i-1", False), (None, "aws:///x/i-1", True), (None, None, False)])
def test_launched_is_the_condition_else_a_provider_id(launched, provider, expected):
    """pkg/controllers/nodeclaim/lifecycle/launch.go sets Launched; without the condition a dump
    shows a launched NodeClaim by its status.providerID."""
    [state] = load_cluster([nodeclaim("c", provider=provider, launched=launched)], facts=True).nodes
    assert state.claim.launched is expected


@pytest.mark.parametrize("claim", [nodeclaim("c1", node_name="n1"), nodeclaim("c1", provider="aws:///x/i-1")])
def test_nodeclaim_joins_its_node_by_node_name_or_provider_id(claim):
    """cluster.go joins by provider ID; a snapshot may lack spec.providerID, so status.nodeName is tried first."""
    cluster = load_cluster([node("n1", provider="aws:///x/i-1"), claim, node("n2")], facts=True)
    assert [(n.name, n.claim.name if n.claim else None) for n in cluster.nodes] == [("n1", "c1"), ("n2", None)]


def test_default_mode_keeps_its_state_nodes_to_registered_nodes():
    """The scheduling view is unchanged: an in-flight NodeClaim is the scheduler's (inputs.nodeclaims), not a candidate."""
    objs = [nodeclaim("c1", provider="aws:///x/i-1", launched="True")]
    assert load_cluster(objs).nodes == [] and [n.name for n in load_cluster(objs, facts=True).nodes] == ["c1"]


@pytest.mark.parametrize("kind", ["Node", "NodeClaim"])
def test_object_without_a_name_says_missing_metadata_name(kind):
    obj = node("x") if kind == "Node" else nodeclaim("x")
    obj["metadata"].pop("name")
    with pytest.raises(InputError) as err:
        load_cluster([obj], ["snap.yaml"], facts=True)
    assert (err.value.path, err.value.origin) == ("metadata.name", "snap.yaml") and kind in str(err.value)
