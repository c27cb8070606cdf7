"""Default enforcement levels and per-environment defaults, one row per environment.

An environment without a row (a new stack, or `pulumi policy publish` with no stack) gets the
`default` row: prod's levels and dev's ceilings, the strictest of each, until someone adds a row.
Every level can be overridden per run with `--policy-pack-config` (preview) or `--config`
(offline check); see docs/policies.md.
"""

from __future__ import annotations

ADVISORY, MANDATORY, DISABLED, REMEDIATE = "advisory", "mandatory", "disabled", "remediate"
LEVEL_NAMES = (ADVISORY, MANDATORY, REMEDIATE, DISABLED)
ENVIRONMENTS = ("dev", "staging", "prod")
DEFAULT_ROW = "default"

_M, _A, _D = MANDATORY, ADVISORY, DISABLED

#                                          dev  staging prod
LEVELS: dict[str, tuple[str, str, str]] = {
    "nodepool-limits-within-ceiling":      (_M, _M, _M),
    "nodepool-has-instance-types":         (_M, _M, _M),
    "nodepool-fits-largest-pod":           (_A, _M, _M),
    "nodepool-gpu-tainted":                (_M, _M, _M),
    "nodepool-disruption-budgets":         (_A, _A, _M),
    "nodepool-expire-after-set":           (_A, _M, _M),
    "nodepool-spot-allowed":               (_M, _M, _M),
    "nodepool-odigos-startup-taint":       (_A, _M, _M),
    "nodepool-team-ownership":             (_M, _M, _M),
    "nodepool-size-capped":                (_A, _A, _A),
    "team-budget":                         (_A, _A, _M),
    "nodeclass-imdsv2-hop-limit-1":        (_M, _M, _M),
    "nodeclass-root-volume-encrypted":     (_M, _M, _M),
    "nodeclass-ami-pinned":                (_D, _M, _M),
    "nodeclass-role-has-access-entry":     (_M, _M, _M),
    "iam-no-wildcard-action":              (_M, _M, _M),
    "iam-passrole-node-role-only":         (_M, _M, _M),
    "iam-document-size":                   (_M, _M, _M),
    "interruption-queue-wired":            (_A, _M, _M),
    "discovery-single-security-group":     (_M, _M, _M),
    "helm-chart-version-pinned":           (_M, _M, _M),
    "helm-crds-protected":                 (_A, _M, _M),
    "karpenter-controller-replicas":       (_A, _A, _M),
}

# Largest `spec.limits` a single NodePool may declare, per environment (Kubernetes quantities).
CEILINGS: dict[str, dict[str, str]] = {
    "dev": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8"},
    "staging": {"cpu": "512", "memory": "4Ti", "nvidia.com/gpu": "32"},
    "prod": {"cpu": "1024", "memory": "4Ti", "nvidia.com/gpu": "64"},
    DEFAULT_ROW: {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8"},
}


def row(environment: str | None) -> str:
    """The table row an environment uses."""
    return environment if environment in ENVIRONMENTS else DEFAULT_ROW


def default_level(policy_name: str, environment: str | None) -> str:
    levels = LEVELS[policy_name]
    key = row(environment)
    return levels[ENVIRONMENTS.index("prod" if key == DEFAULT_ROW else key)]


def ceilings(environment: str | None) -> dict[str, str]:
    return dict(CEILINGS[row(environment)])
