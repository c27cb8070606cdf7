"""The two Karpenter helm releases: `karpenter-crd` (the CRDs, kept forever) and `karpenter`
(the controller, without its own copy of the CRDs), both at the stack's `karpenter.version`."""

from __future__ import annotations

from typing import Any, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from .config import PlatformConfig

CRD_CHART = "oci://public.ecr.aws/karpenter/karpenter-crd"
CONTROLLER_CHART = "oci://public.ecr.aws/karpenter/karpenter"
CRD_RELEASE = "karpenter-crd"
CONTROLLER_RELEASE = "karpenter"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
# Deleting the CRDs deletes every NodePool and NodeClaim, and with them every node Karpenter
# launched. Helm keeps resources carrying this annotation on uninstall and upgrade.
KEEP = {"helm.sh/resource-policy": "keep"}


def feature_gates(config: PlatformConfig) -> dict[str, bool]:
    """The gates the stack sets (unset ones keep the chart's default), plus nodeOverlay when
    Odigos' k8s-virtual-device mount method needs Karpenter to honour a NodeOverlay."""
    gates = config.settings.karpenter.feature_gates.model_dump(by_alias=True, exclude_none=True)
    if config.settings.odigos.needs_node_overlay:
        gates["nodeOverlay"] = True
    # Team NodeOverlays do nothing without the gate; an explicit `nodeOverlay: false` is kept.
    if gates.get("nodeOverlay") is not False and any(team.node_overlays and team.node_pools for team in config.teams):
        gates["nodeOverlay"] = True
    return gates


def crd_chart_values() -> dict[str, Any]:
    return {"additionalAnnotations": dict(KEEP)}


def controller_chart_values(
    config: PlatformConfig,
    *,
    cluster_name: pulumi.Input[str],
    cluster_endpoint: pulumi.Input[str],
    queue_name: pulumi.Input[str] | None,
    controller_role_arn: pulumi.Input[str],
) -> dict[str, Any]:
    """Values of the `karpenter` chart; every key exists in the pinned release's chart defaults (checked
    when the config is loaded, components/versions.py).
    Outputs sit at the leaves only, so everything else is known at preview (policies read it)."""
    karpenter = config.settings.karpenter
    settings: dict[str, Any] = {"clusterName": cluster_name, "clusterEndpoint": cluster_endpoint}
    if queue_name is not None:
        settings["interruptionQueue"] = queue_name
    if karpenter.enable_zonal_shift is not None:
        settings["enableZonalShift"] = karpenter.enable_zonal_shift
    gates = feature_gates(config)
    if gates:
        settings["featureGates"] = gates
    service_account: dict[str, Any] = {"name": karpenter.service_account}
    if karpenter.identity == "irsa":
        # Pod Identity needs no annotation: the association is keyed on namespace and name.
        service_account["annotations"] = {IRSA_ANNOTATION: controller_role_arn}
    return {
        "settings": settings,
        "replicas": karpenter.replicas,
        "logLevel": karpenter.log_level,
        "serviceAccount": service_account,
        "controller": {"resources": karpenter.resources.model_dump(by_alias=True, exclude_none=True)},
    }


class _ReleaseOptions(TypedDict):
    """The Release arguments both charts share."""
    version: str
    namespace: str
    create_namespace: bool
    max_history: int


class Karpenter(pulumi.ComponentResource):
    """`crd_release` then `controller` (depends on it). The CRD release is retained when deleted
    from the stack (and its CRDs carry helm's keep policy), so neither `pulumi destroy` nor a
    helm uninstall removes the CRDs.

    `depends_on` (the AWS side) applies to the controller: it needs its role (and Pod Identity
    association) before it starts, and `pulumi destroy` must remove it before them."""

    def __init__(
        self,
        name: str,
        config: PlatformConfig,
        *,
        cluster_name: pulumi.Input[str],
        cluster_endpoint: pulumi.Input[str],
        queue_name: pulumi.Input[str] | None,
        controller_role_arn: pulumi.Input[str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("karpenter-platform:index:Karpenter", name, None, opts)
        karpenter = config.settings.karpenter
        common: _ReleaseOptions = {"version": karpenter.version, "namespace": karpenter.namespace,
                                   "create_namespace": karpenter.namespace != "kube-system", "max_history": 10}
        self.crd_release = k8s.helm.v3.Release(
            f"{name}-crd",
            name=CRD_RELEASE,
            chart=CRD_CHART,
            values=crd_chart_values(),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            **common,
        )
        values = controller_chart_values(config, cluster_name=cluster_name, cluster_endpoint=cluster_endpoint,
                                         queue_name=queue_name, controller_role_arn=controller_role_arn)
        self.controller = k8s.helm.v3.Release(
            f"{name}-controller",
            name=CONTROLLER_RELEASE,
            chart=CONTROLLER_CHART,
            skip_crds=True,
            values=values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.crd_release, *depends_on]),
            **common,
        )
        self.register_outputs({"crdRelease": self.crd_release.name, "controllerRelease": self.controller.name})
