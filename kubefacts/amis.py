"""EC2NodeClass AMI aliases (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go: the
`amiSelectorTerms[].alias` families, `family@version`) and the `amiFamily` each stands for."""
from __future__ import annotations

FAMILY_OF_ALIAS: dict[str, str] = {
    "al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket", "windows2019": "Windows2019",
    "windows2022": "Windows2022", "windows2025": "Windows2025",
}
ALIAS_OF_FAMILY: dict[str, str] = {family: alias for alias, family in FAMILY_OF_ALIAS.items()}


def missing_selector_hint(ami_family: object) -> str:
    """What to write instead of a v1 EC2NodeClass's `amiFamily` alone (v1 requires
    amiSelectorTerms): the alias of that family, or "" when it has none (Custom)."""
    alias = ALIAS_OF_FAMILY.get(str(ami_family))
    return f"; for amiFamily {ami_family} the matching alias is {alias}@<version>, e.g. {{alias: {alias}@latest}}" \
        if alias else ""


__all__ = ["ALIAS_OF_FAMILY", "FAMILY_OF_ALIAS", "missing_selector_hint"]
