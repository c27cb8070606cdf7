"""Our provisioner service, deployed in the cluster as an advisor."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import Model
from .karpenter import ResourceList, requests_within_limits
from .kube import DnsLabel

Platform = Literal["linux/amd64", "linux/arm64"]


def _default_platforms() -> list[Platform]:
    return ["linux/amd64"]


class ProvisionerResources(Model):
    """Advisor container resources; each request at most its limit (the API server's rule)."""

    requests: ResourceList = Field(default_factory=lambda: ResourceList(cpu="100m", memory="256Mi"))
    """Requests (default 100m CPU, 256Mi memory)."""
    limits: ResourceList = Field(default_factory=lambda: ResourceList(cpu="1", memory="1Gi"))
    """Limits (default 1 CPU, 1Gi memory). Memory grows with the cluster: the advisor caches every
    pod, node and DaemonSet, roughly 10-20 KiB a pod."""

    @model_validator(mode="after")
    def _requests_within_limits(self) -> ProvisionerResources:
        requests_within_limits(self.requests, self.limits)
        return self


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
    """Advisor replicas (each plans on its own; Events stay deduplicated across them)."""
    resources: ProvisionerResources = Field(default_factory=ProvisionerResources)
    """Advisor container resources."""
    platforms: list[Platform] = Field(default_factory=_default_platforms)
    """Platforms the image is built for; the advisor is scheduled only on nodes of these architectures."""
    live_catalog: bool = True
    """Give the advisor an IAM role to read instance types, offerings and prices from AWS (read-only);
    without it, or when AWS refuses, it plans with the catalog bundled in the image."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Advisor log level."""
    metrics_scrapers: list[dict[str, Any]] = Field(default_factory=lambda: [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}])
    """Who may connect to the advisor's metrics port: NetworkPolicy peers (`namespaceSelector`,
    `podSelector`, `ipBlock`); the rendered NetworkPolicy admits nobody else (the kubelet's probes
    come from the node, which NetworkPolicy always admits). Default: pods labelled
    `app.kubernetes.io/name: prometheus` in any namespace."""

    @field_validator("metrics_scrapers")
    @classmethod
    def _scrapers(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not value:
            raise ValueError("at least one scraper is needed, or nothing could read the metrics")
        for index, peer in enumerate(value):
            keys = set(peer)
            if not keys or keys - {"namespaceSelector", "podSelector", "ipBlock"}:
                raise ValueError(f"[{index}]: a NetworkPolicy peer has namespaceSelector, podSelector or ipBlock, "
                                 f"got {sorted(keys) or 'nothing'}")
            if "ipBlock" in keys and len(keys) > 1:
                raise ValueError(f"[{index}]: ipBlock stands alone in a NetworkPolicy peer")
            if any(not isinstance(peer[k], dict) for k in keys):
                raise ValueError(f"[{index}]: each selector or ipBlock is a mapping")
        return value

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("at least one platform is needed (linux/amd64 or linux/arm64)")
        if len(set(value)) != len(value):
            raise ValueError("a platform is listed twice")
        return value
