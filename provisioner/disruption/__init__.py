"""Karpenter's disruption decisions (drift, consolidation) as pure functions: no clients, no files."""
