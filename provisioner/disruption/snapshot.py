"""Former home of the disruption snapshot reader, kept so existing imports work: the cluster model
is provisioner.state (Cluster, StateNode), read by provisioner.state.reader.load_cluster."""
from __future__ import annotations

from ..state.cluster import Cluster
from ..state.objects import (DISRUPTED_TAINT_KEY, DO_NOT_DISRUPT, POD_DELETION_COST, POLICIES, REASONS, Budget,
                             NodeClaimInfo, NodeInfo, Pdb, PodInfo, PoolDisruption, go_duration)
from ..state.reader import load_cluster, load_node_info, load_nodeclaim, load_pdb, load_pod_info, load_pool_disruption

Snapshot = Cluster
load_snapshot = load_cluster

__all__ = ["Snapshot", "load_snapshot", "Budget", "PoolDisruption", "PodInfo", "NodeClaimInfo", "NodeInfo", "Pdb",
           "go_duration", "DO_NOT_DISRUPT", "POD_DELETION_COST", "DISRUPTED_TAINT_KEY", "POLICIES", "REASONS",
           "load_node_info", "load_nodeclaim", "load_pdb", "load_pod_info", "load_pool_disruption"]
