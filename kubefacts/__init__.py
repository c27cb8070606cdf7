"""Kubernetes and Karpenter facts, kept once: located errors, quantities, durations, label/taint/
requirement rules per Karpenter release, and the bounded YAML/JSON reader.

The bottom of the import graph: nothing here imports another package of this repository
(`.importlinter` holds that), so every tool judges a value with the same code.
"""
