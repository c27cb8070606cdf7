"""Karpenter's disruption decisions (pkg/controllers/disruption of kubernetes-sigs/karpenter) as pure
functions, no clients and no files: what a change would drift, what a snapshot would consolidate, and why."""
