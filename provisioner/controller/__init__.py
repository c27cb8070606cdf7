"""`provisioner serve`: the in-cluster advisor.

    kinds       what is watched            reflector  list + watch per kind (410 -> relist)
    kube        the API adapter (dicts)    cache      objects by kind and uid
    pending     which pods, what to plan   batcher    batch windows, token bucket, backoff
    controller  the state machine          events     deduplicated, rate-limited pod Events
    metrics     Prometheus collectors      http       /metrics /healthz /readyz
    catalog     live or bundled catalog    core       the only module importing the simulator
    loop        threads and queue          command    argparse wiring

The Kubernetes client is imported only by `kube.KubernetesApi`; everything else works on
plain dicts and an explicit clock, so tests drive it with a fake API and no sleeping.
"""
