"""`provisioner replay`: a discrete-event simulation of Karpenter v1.14 and the kube-scheduler over
simulated time (nothing sleeps: time is a variable), chaining the provisioner's pure provisioning
and disruption functions.

Modules, one concern each: trace (schema and validation), clock (the heap of timed events),
workloads (controllers and their pods), cluster (nodes, pods, binding and launching),
disruption (Karpenter's disruption controller over the replayed cluster), engine (the event
loop), metrics (accounting), output (json, table, html), sources (synthetic and audit-log traces),
parallel (local worker processes), bench (the benchmark).
"""
