"""The replayed cluster's bookkeeping (provisioner/replay/cluster.py)."""
from __future__ import annotations

from provisioner.models import Inputs, PodSpec
from provisioner.replay.cluster import Cluster, SimNode, SimPod


def _pod(name: str) -> SimPod:
    return SimPod(name, spec=None, workload=None, labels={}, annotations={}, owner=None, created_at=0.0)


def test_a_pod_recreated_under_a_bound_pods_name_leaves_no_stale_name_on_the_node():
    """Found by the pass-cache property test: a controller recreated `default/web-0` while the old
    one was still bound; removing the new one left the name on the node, and the next scheduling
    view looked it up (KeyError). Every name a node holds must be a pod of the cluster."""
    cluster = Cluster([], Inputs())
    node = SimNode("n1", "default", "m5.large", "on-demand", "us-east-1a", 0.1, {}, (), {}, {}, 0.0, ready_at=0.0)
    cluster.nodes[node.name] = node
    old = _pod("default/web-0")
    cluster.add_pod(old)
    cluster.bind(old, "n1", 1.0)
    new = _pod("default/web-0")
    cluster.add_pod(new)
    cluster.remove_pod(new, 2.0)
    assert node.pods == set() and cluster.pods == {}


def _sized(name: str, cpu: int) -> SimPod:
    spec = PodSpec(namespace="default", labels={}, requests={"cpu": cpu, "pods": 1000})
    return SimPod(name, spec=spec, workload=None, labels={}, annotations={}, owner=None, created_at=0.0)


def test_what_a_node_has_left_follows_its_pods_as_they_come_and_go():
    """Cluster._some_fit keeps each node's free resources while its pods are the same objects."""
    cluster = Cluster([], Inputs())
    node = SimNode("n1", "default", "m5.large", "on-demand", "us-east-1a", 0.1, {}, (), {"cpu": 2000, "pods": 110_000},
                   {}, 0.0, ready_at=0.0)
    cluster.nodes[node.name] = node
    big = _sized("default/big", 1500)
    waiting = _sized("default/waiting", 1000)
    cluster.add_pod(waiting)
    assert cluster._some_fit([waiting], [node])
    cluster.add_pod(big)
    cluster.bind(big, "n1", 1.0)
    assert not cluster._some_fit([waiting], [node])
    cluster.remove_pod(big, 2.0)
    assert cluster._some_fit([waiting], [node])
    other = _sized("default/big", 1500)  # the same name, another pod
    cluster.add_pod(other)
    cluster.bind(other, "n1", 3.0)
    assert not cluster._some_fit([waiting], [node])


def test_a_pods_model_is_kept_while_its_node_is_the_same():
    pod = _sized("default/web-0", 100)
    first = pod.model("n1")
    assert pod.model("n1") is first and first.node_name == "n1"
    moved = pod.model("n2")
    assert moved is not first and moved.node_name == "n2" and pod.model().node_name is None
def test_pod_log_lists_the_pods_added_bound_and_removed_once_a_reader_sets_it():
    """Cluster.pod_log is what the disruption passes' cache (replay/pod_reads.py) keeps its pod
    lists by: every change to a pod's presence or node, in order; None until a reader sets it."""
    cluster = Cluster([], Inputs())
    node = SimNode("n1", "default", "m5.large", "on-demand", "us-east-1a", 0.1, {}, (), {}, {}, 0.0, ready_at=0.0)
    cluster.nodes[node.name] = node
    a = _pod("default/a")
    cluster.add_pod(a)
    assert cluster.pod_log is None
    cluster.pod_log = []
    cluster.add_pod(_pod("default/b"))
    cluster.bind(a, "n1", 1.0)
    cluster.remove_pod(a, 2.0)
    assert cluster.pod_log == [("default/b", "add"), ("default/a", "bind"), ("default/a", "remove")]


def test_a_nodes_end_leaves_no_pod_nominated_to_it():
    """Cluster.terminate: pods Karpenter nominated to the node are pending for anything again."""
    cluster = Cluster([], Inputs())
    node = SimNode("n1", "default", "m5.large", "on-demand", "us-east-1a", 0.1, {}, (), {}, {}, 0.0)
    cluster.nodes[node.name] = node
    waiting, other = _pod("default/a"), _pod("default/b")
    cluster.add_pod(waiting)
    cluster.add_pod(other)
    waiting.nominated, other.nominated = "n1", "n2"
    cluster.terminate(node, 1.0)
    assert waiting.nominated is None and other.nominated == "n2" and list(cluster.pending) == ["default/a", "default/b"]
