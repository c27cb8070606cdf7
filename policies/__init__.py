"""The karpenter-platform policy pack: pure policies over a neutral view of a stack.

Importing this package never starts anything: `policies/__main__.py` alone constructs the
CrossGuard PolicyPack (which starts a gRPC server), `policies.check` runs the same policies over
an offline render. See docs/policies.md.
"""
