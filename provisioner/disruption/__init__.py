"""Karpenter's disruption decisions (pkg/controllers/disruption of kubernetes-sigs/karpenter):
what a snapshot of a cluster would have consolidated, drifted or blocked, and why."""
