"""The replayed cluster's bookkeeping (provisioner/replay/cluster.py)."""
from __future__ import annotations

from provisioner.models import Inputs
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
