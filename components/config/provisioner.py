"""Our provisioner service, deployed in the cluster as an advisor."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model
from .kube import DnsLabel


class ProvisionerConfig(Model):
    """The in-cluster provisioner (advisor): explains Pending pods and prices the pending plan."""

    enabled: bool = False
    """Build the image and deploy the advisor."""
    mode: Literal["advisor", "metrics-only"] = "advisor"
    """`advisor` records Events on pods no NodePool can schedule and exports metrics;
    `metrics-only` exports metrics and records nothing."""
    namespace: DnsLabel = "karpenter-provisioner"
    """Namespace of the advisor."""
    replicas: int = Field(default=1, ge=1, le=3)
    """Advisor replicas."""
