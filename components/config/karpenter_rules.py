"""Karpenter's NodePool/NodeClaim runtime rules and the API server's metadata rules, as pure checks.

Sources (kubernetes-sigs/karpenter and aws/karpenter-provider-aws at v1.14.1):
- `pkg/apis/v1/labels.go` (core): restricted domain karpenter.sh, restricted kubernetes.io/hostname,
  well-known labels and their known values (capacity type);
- `pkg/apis/v1/labels.go` (provider): restricted domain karpenter.k8s.aws and its well-known labels
  (no `karpenter.k8s.aws/ec2nodeclass`: it is not registered as well-known), tenancy values;
- `pkg/apis/v1/nodepool_validation.go`, `nodeclaim_validation.go`: label keys and values, duplicate
  taint key/effect pairs across `taints` and `startupTaints`, requirement values;
- `pkg/apis/v1/nodepool.go`: budget schedules parsed by robfig/cron's standard parser (kubefacts.cron);
- the NodePool CRD: at most 100 requirements, 100 labels, 50 budgets.
Kubelet (k8s.io/kubelet/pkg/apis/well_known_labels.go) refuses `--node-labels` in the kubernetes.io
and k8s.io domains other than its own list, and Karpenter passes a NodePool's labels that way: a
node carrying one never registers. API machinery (apimachinery/pkg/api/validation/objectmeta.go):
annotation keys are qualified names and all annotations together hold at most 256 KiB.
"""

from __future__ import annotations

from kubefacts.platform import TEAM_LABEL

MAX_REQUIREMENTS = 100
MAX_LABELS = 100
MAX_BUDGETS = 50

TEAM_LABEL_KEY = TEAM_LABEL

# Label, taint and requirement rules live in the kernel (kubefacts.labels).
from kubefacts.labels import qualified_name  # noqa: E402
from kubefacts.validation.metadata import MAX_ANNOTATIONS_BYTES  # noqa: E402

# --- object metadata ---------------------------------------------------------------------------

def annotations_problem(annotations: dict[str, str]) -> str | None:
    """ValidateAnnotations: qualified-name keys, at most 256 KiB of keys and values together."""
    for key in annotations:
        problem = qualified_name(key)
        if problem:
            return f"annotation key {problem}"
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if total > MAX_ANNOTATIONS_BYTES:
        return f"annotations total {total:,} bytes; the API server allows at most 256 KiB ({MAX_ANNOTATIONS_BYTES:,})"
    return None


__all__ = ["MAX_ANNOTATIONS_BYTES", "MAX_BUDGETS", "MAX_LABELS", "MAX_REQUIREMENTS", "TEAM_LABEL_KEY",
           "annotations_problem"]
