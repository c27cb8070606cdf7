"""The API server's judgment of generated Karpenter objects (CRD schema and CEL rules): kept once
in the kernel, kubefacts.validation.schema; these names stay for the render, the version gate and
preflight. Whole-object verdicts (schema, CEL and Karpenter's runtime checks) are
kubefacts.validation.validate."""

from __future__ import annotations

from kubefacts.validation.schema import (Cel, CelRule, CrdValidator, Violation, apply_defaults, is_karpenter_object,
                                         to_json_schema, validate_manifests, validator_for)

__all__ = ["Cel", "CelRule", "CrdValidator", "Violation", "apply_defaults", "is_karpenter_object", "to_json_schema",
           "validate_manifests", "validator_for"]
