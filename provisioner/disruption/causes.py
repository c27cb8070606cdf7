"""Short, bounded names for why a node is left alone (metric labels), from the sentences the
disruption core writes. Order matters: the first matching pattern names the cause."""
from __future__ import annotations

CAUSES = (
    ("do-not-disrupt", "karpenter.sh/do-not-disrupt"),
    ("pdb", "PodDisruptionBudget"),
    ("budget", "disruption budget"),
    ("budget", "has no budget"),
    ("balanced", "consolidationPolicy Balanced"),
    ("policy", "consolidationPolicy WhenEmpty"),
    ("consolidation-disabled", "consolidateAfter: Never"),
    ("consolidate-after", "consolidateAfter ("),
    ("static-nodepool", "is static"),
    ("spot-to-spot", "spot"),
    ("no-cheaper-replacement", "no cheaper replacement"),
    ("pods-do-not-fit", "would not all fit"),
    ("pods-do-not-fit", "new nodes"),
    ("pods-do-not-fit", "not initialized yet"),
    ("not-initialized", "not initialized"),
    ("deleting", "already being deleted"),
    ("unmanaged", "no NodeClaim"),
    ("waits-next-pass", "waits for a later pass"),
    ("unpriced", "cannot price"),
    ("unknown-nodepool", "NodePool"),
)


def cause_of(why: str) -> str:
    for name, marker in CAUSES:
        if marker in why:
            return name
    return "other"
