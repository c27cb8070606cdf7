"""The whole configuration of one stack (environment): the models every component reads."""

from __future__ import annotations

from pydantic import Field

from .base import Model
from .cluster import ClusterConfig
from .karpenter import KarpenterConfig
from .kube import DnsLabel
from .nodeclasses import NodeClass
from .odigos import OdigosConfig
from .provisioner import ProvisionerConfig
from .teams import Team

PROJECT = "karpenter-platform"


class StackSettings(Model):
    """Keys of the stack file under the `karpenter-platform:` namespace."""

    environment: DnsLabel | None = None
    """Environment name used for team overrides and policy levels; defaults to the stack name."""
    cluster: ClusterConfig
    """The existing EKS cluster."""
    karpenter: KarpenterConfig = Field(default_factory=KarpenterConfig)
    """The Karpenter controller."""
    node_classes: dict[DnsLabel, NodeClass] = Field(default_factory=lambda: {"default": NodeClass()})
    """EC2NodeClasses by name; teams refer to them with `nodeClass`."""
    odigos: OdigosConfig = Field(default_factory=OdigosConfig)
    """Odigos and its Karpenter integration."""
    provisioner: ProvisionerConfig = Field(default_factory=ProvisionerConfig)
    """The in-cluster provisioner (advisor)."""
    teams: list[DnsLabel] = Field(default_factory=list)
    """Team files (`stacks/teams/<team>.yaml`) this stack runs."""


class PlatformConfig(Model):
    """A validated stack: its settings and its teams, with presets and overrides applied."""

    stack: str
    """Stack name."""
    environment: str
    """Environment name (the stack name unless set)."""
    settings: StackSettings
    teams: list[Team]
    """Teams in the order the stack names them."""
    odigos_token_configured: bool = False
    """Whether the secret `odigosOnPremToken` is set (its value never enters the model)."""
