"""Config patterns use Go RE2 semantics, as the API server applies the CRDs' patterns: Python's `$`
matches before a final newline, so `"us-east-1\\n"` passed `^...$` checks (issue 12). Each value
below is accepted as written and refused with a trailing newline."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.config.cluster import ClusterConfig
from components.config.karpenter import KarpenterConfig, NodeRoleConfig
from components.config.nodeclasses import NodeClass
from components.config.nodeoverlays import NodeOverlay
from components.config.odigos import OdigosConfig

SUBNETS = {"ids": ["subnet-0123456789abcdef0"]}

CASES = {
    "cluster region": lambda v: ClusterConfig.model_validate({"name": "a", "region": v, "subnets": SUBNETS}),
    "subnet id": lambda v: ClusterConfig.model_validate({"name": "a", "region": "us-east-1", "subnets": {"ids": [v]}}),
    "ami alias": lambda v: NodeClass.model_validate({"amiAlias": v}),
    "root volume size": lambda v: NodeClass.model_validate({"rootVolume": {"size": v}}),
    "node role arn": lambda v: NodeRoleConfig.model_validate({"existingArn": v}),
    "permissions boundary": lambda v: KarpenterConfig.model_validate({"permissionsBoundary": v}),
    "overlay price": lambda v: NodeOverlay.model_validate({"name": "o", "price": v}),
    "odigos chart version": lambda v: OdigosConfig.model_validate({"enabled": True, "mountMethod": "k8s-virtual-device",
                                                             "chartVersion": v}),
}
VALID = {
    "cluster region": "us-east-1",
    "subnet id": "subnet-0123456789abcdef0",
    "ami alias": "al2023@v20251117",
    "root volume size": "50Gi",
    "node role arn": "arn:aws:iam::123456789012:role/nodes",
    "permissions boundary": "arn:aws:iam::123456789012:policy/boundary",
    "overlay price": "0.5",
    "odigos chart version": "1.35.1",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pattern_checked_value_is_accepted_as_written_and_refused_with_a_trailing_newline(case):
    CASES[case](VALID[case])
    with pytest.raises(ValidationError):
        CASES[case](VALID[case] + "\n")
