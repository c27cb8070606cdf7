"""Cluster state as Karpenter's `pkg/controllers/state` keeps it: Nodes joined to NodeClaims, with
what disruption reads beside them (conditions, deletion, NodePool disruption blocks, PDBs)."""
from .cluster import Cluster, build_cluster
from .statenode import StateNode

__all__ = ["Cluster", "StateNode", "build_cluster"]
