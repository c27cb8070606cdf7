"""Karpenter's provisioning decisions in Python (simulator and in-cluster advisor)."""
