"""Default enforcement levels and per-environment defaults, one row per environment.

An environment without a row (a new stack, or `pulumi policy publish` with no stack) gets the
`default` row: prod's levels and dev's ceilings, the strictest of each, until someone adds a row.
Every level can be overridden per run with `--policy-pack-config` (preview) or `--config`
(offline check); see docs/policies.md.
"""

from __future__ import annotations

# The environments and the per-environment ceilings are config defaults the importer shares.
from components.config.ceilings import CEILINGS, DEFAULT_ROW, ENVIRONMENTS, ceilings, row  # noqa: F401

ADVISORY, MANDATORY, DISABLED, REMEDIATE = "advisory", "mandatory", "disabled", "remediate"
LEVEL_NAMES = (ADVISORY, MANDATORY, REMEDIATE, DISABLED)

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


def default_level(policy_name: str, environment: str | None) -> str:
    levels = LEVELS[policy_name]
    key = row(environment)
    return levels[ENVIRONMENTS.index("prod" if key == DEFAULT_ROW else key)]
