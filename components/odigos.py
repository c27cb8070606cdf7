"""Odigos and its Karpenter integration, decided by the mount method:

- k8s-host-path / k8s-csi-driver: `karpenter.enabled=true` (no odiglet node affinity on
  instrumented pods), NodePools get the startup taint (components/nodepools.py), and once per
  integration setting a Job taints the existing nodes, then a DaemonSet patch restarts odiglet,
  which removes the taint from each node it has prepared.
- k8s-init-container: nothing else (no taint: nothing would remove it).
- k8s-virtual-device: a NodeOverlay telling Karpenter that the stack's NodePools' nodes offer
  the Odigos device (the controller's nodeOverlay gate is set in components/karpenter.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .config import PROJECT, PlatformConfig
from .config.odigos import NEEDS_INIT_EFFECT, NEEDS_INIT_TAINT, OdigosConfig

CHART = "odigos"
REPOSITORY = "https://odigos-io.github.io/odigos"
RELEASE = "odigos"
GENERIC_DEVICE = "instrumentation.odigos.io/generic"
INTEGRATION_ANNOTATION = "karpenter-platform.io/odigos-integration"
PREPARE = "odigos-prepare-nodes"
NODE_OVERLAY = "odigos-instrumentation"
MANAGED_BY = {"app.kubernetes.io/managed-by": "karpenter-platform"}


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def integration_settings(odigos: OdigosConfig) -> dict[str, Any]:
    """What the taint-and-restart step depends on; a change re-runs it."""
    return {
        "mountMethod": odigos.mount_method,
        "karpenterEnabled": odigos.needs_startup_taint,
        "taint": f"{NEEDS_INIT_TAINT}=:{NEEDS_INIT_EFFECT}",
        "nodeSelector": odigos.prepare_node_selector,
        "namespace": odigos.namespace,
        # The Job releases its ClusterRoleBinding when done: stacks whose Job ran before it did get
        # one more run (the hash, hence the Job's and the binding's names, change), which releases it.
        "releasesBinding": True,
    }


def integration_hash(odigos: OdigosConfig) -> str:
    return hashlib.sha256(json.dumps(integration_settings(odigos), sort_keys=True).encode()).hexdigest()[:8]


def odigos_values(odigos: OdigosConfig, *, cluster_name: Any = None, on_prem_token: Any = None) -> dict[str, Any]:
    """The release's values: the user's `values` under the integration's own keys (config
    refuses a `values` that sets those). The token is passed through as given (a secret Output)."""
    values = _merge(odigos.values, {
        "instrumentor": {"mountMethod": odigos.mount_method},
        "karpenter": {"enabled": odigos.needs_startup_taint},
    })
    if odigos.odiglet_tolerations is not None:
        values = _merge(values, {"odiglet": {"tolerations": [
            t.model_dump(by_alias=True, exclude_none=True) for t in odigos.odiglet_tolerations]}})
    if cluster_name is not None and "clusterName" not in odigos.values:
        values["clusterName"] = cluster_name  # how the cluster is named in Odigos' central backend
    if on_prem_token is not None:
        values["onPremToken"] = on_prem_token
    return values


def odiglet_daemonset_name(odigos: OdigosConfig) -> str:
    odiglet = odigos.values.get("odiglet")
    return (odiglet.get("daemonsetName") if isinstance(odiglet, dict) else None) or "odiglet"


def prepare_binding(odigos: OdigosConfig) -> str:
    """The ClusterRoleBinding that lets the prepare Job patch nodes, named like the Job (one per
    integration hash): the Job deletes it once every node is tainted, so patch on every Node is
    held only for the Job's life, and a new integration setting binds (and releases) a new one."""
    return f"{PREPARE}-{integration_hash(odigos)}"


def prepare_rbac(namespace: str, binding: str) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole (get/list/patch nodes: what tainting needs; delete on its own
    binding only, to release it when done) and that binding."""
    meta = {"name": PREPARE, "labels": dict(MANAGED_BY)}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
                   {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterrolebindings"],
                    "resourceNames": [binding], "verbs": ["delete"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {**meta, "name": binding},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PREPARE},
         "subjects": [{"kind": "ServiceAccount", "name": PREPARE, "namespace": namespace}]},
    ]


def prepare_command(odigos: OdigosConfig, *, provisioner_image: bool) -> list[str]:
    """Taint every selected node once. The provisioner's command is idempotent, reports what it
    did and then deletes the Job's ClusterRoleBinding; without the provisioner, `kubectl taint
    --overwrite` does the same tainting (and `release_command` the deleting)."""
    taint = f"{NEEDS_INIT_TAINT}=:{NEEDS_INIT_EFFECT}"
    if provisioner_image:
        return ["provisioner", "odigos-prepare-nodes", "--taint", taint, "--selector", odigos.prepare_node_selector,
                "--release-binding", prepare_binding(odigos)]
    return ["kubectl", "taint", "nodes", "--selector", odigos.prepare_node_selector, taint, "--overwrite"]


def release_command(odigos: OdigosConfig) -> list[str]:
    """kubectl only (the image has no shell to chain commands): the Job's main container, run
    after the tainting init container succeeded, deletes the binding."""
    return ["kubectl", "delete", "clusterrolebinding", prepare_binding(odigos), "--ignore-not-found"]


def prepare_job(odigos: OdigosConfig, *, image: pulumi.Input[str], provisioner_image: bool) -> dict[str, Any]:
    """The one-off Job, named after the integration hash so that a change runs a new one."""
    digest = integration_hash(odigos)
    labels = {**MANAGED_BY, "app.kubernetes.io/name": PREPARE}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{PREPARE}-{digest}",
            "namespace": odigos.namespace,
            "labels": labels,
            # A failed Job is replaced (run again) by the next `pulumi up`.
            "annotations": {INTEGRATION_ANNOTATION: digest, "pulumi.com/replaceUnready": "true"},
        },
        "spec": {
            "backoffLimit": 4,
            "activeDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": PREPARE,
                    "restartPolicy": "Never",
                    # A retry must still schedule once the nodes carry the taint it adds.
                    "tolerations": [{"key": NEEDS_INIT_TAINT, "operator": "Exists", "effect": NEEDS_INIT_EFFECT},
                                    {"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    **_prepare_containers(odigos, image, provisioner_image),
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def _prepare_containers(odigos: OdigosConfig, image: pulumi.Input[str], provisioner_image: bool) -> dict[str, Any]:
    def container(name: str, command: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "image": image,
            "command": command,
            "env": [{"name": "HOME", "value": "/tmp"}],  # kubectl's cache on a writable volume
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        }

    command = prepare_command(odigos, provisioner_image=provisioner_image)
    if provisioner_image:
        return {"containers": [container("prepare", command)]}
    # Init containers run first and must succeed: the binding is deleted only once every node is tainted.
    return {"initContainers": [container("prepare", command)], "containers": [container("release", release_command(odigos))]}


def odiglet_restart(odigos: OdigosConfig) -> dict[str, Any]:
    """A pod-template annotation change, i.e. `kubectl rollout restart`, keyed on the same hash:
    odiglet removes the startup taint only when its pod starts on a node."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": odiglet_daemonset_name(odigos), "namespace": odigos.namespace,
                     "annotations": {"pulumi.com/patchForce": "true"}},
        "spec": {"template": {"metadata": {"annotations": {INTEGRATION_ANNOTATION: integration_hash(odigos)}}}},
    }


def node_overlay(odigos: OdigosConfig, pool_names: Sequence[str]) -> dict[str, Any]:
    """k8s-virtual-device: Karpenter's simulation must see the device odiglet's device plugin will
    advertise, or it never launches a node for an instrumented pod."""
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": NODE_OVERLAY, "labels": dict(MANAGED_BY)},
        "spec": {
            "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": sorted(pool_names)}],
            "capacity": {GENERIC_DEVICE: str(odigos.node_overlay_capacity)},
        },
    }


class Odigos(pulumi.ComponentResource):
    """The namespace, the release and the mount method's integration resources.

    `prepare_image`: the provisioner image (runs `provisioner odigos-prepare-nodes`); None uses
    `odigos.prepareImage` (kubectl). `karpenter_controller`: the controller release the NodeOverlay
    waits for (its CRD and feature gate). `node_pools`: what declares the NodePools; with a
    startup taint (host-path/csi) the release, which turns the integration on, waits for it, so
    every NodePool carries the taint first (step 1 before step 3 of the Odigos guide)."""

    def __init__(
        self,
        name: str,
        config: PlatformConfig,
        *,
        cluster_name: pulumi.Input[str],
        pool_names: Sequence[str],
        karpenter_controller: pulumi.Resource,
        node_pools: pulumi.Resource | None = None,
        prepare_image: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("karpenter-platform:index:Odigos", name, None, opts)
        odigos = config.settings.odigos
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # odiglet mounts host paths and runs privileged: say so to Pod Security Admission.
            metadata={"name": odigos.namespace,
                      "labels": {**MANAGED_BY, "pod-security.kubernetes.io/enforce": "privileged"}},
            opts=child,
        )
        token = (pulumi.Config(PROJECT).require_secret("odigosOnPremToken") if odigos.edition == "onprem" else None)
        taint_first = [node_pools] if odigos.needs_startup_taint and node_pools is not None else []
        self.release = k8s.helm.v3.Release(
            name,
            name=RELEASE,
            chart=CHART,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=REPOSITORY),
            version=odigos.chart_version,
            namespace=namespace.metadata["name"],
            values=odigos_values(odigos, cluster_name=cluster_name, on_prem_token=token),
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, *taint_first]),
        )
        self.integration_hash = integration_hash(odigos)
        self.node_overlay: k8s.apiextensions.CustomResource | None = None
        self.prepare_job: k8s.batch.v1.Job | None = None
        if odigos.needs_startup_taint:
            self._taint_and_restart(name, odigos, prepare_image)
        if odigos.needs_node_overlay and pool_names:
            overlay = node_overlay(odigos, pool_names)
            self.node_overlay = k8s.apiextensions.CustomResource(
                f"{name}-node-overlay", api_version=overlay["apiVersion"], kind=overlay["kind"],
                metadata=overlay["metadata"], spec=overlay["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[karpenter_controller]),
            )
        self.register_outputs({"release": self.release.name, "integrationHash": self.integration_hash})

    def _taint_and_restart(self, name: str, odigos: OdigosConfig, prepare_image: pulumi.Input[str] | None) -> None:
        rbac = []
        for manifest in prepare_rbac(odigos.namespace, prepare_binding(odigos)):
            kind = manifest["kind"]
            resource_type = {"ServiceAccount": k8s.core.v1.ServiceAccount, "ClusterRole": k8s.rbac.v1.ClusterRole,
                             "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding}[kind]
            body = {{"roleRef": "role_ref"}.get(k, k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
            rbac.append(resource_type(f"{name}-prepare-{kind.lower()}", **body,
                                      opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release])))
        image = prepare_image if prepare_image is not None else odigos.prepare_image
        # The image (an Output when built by the stack) stays a leaf: name and spec are known at preview.
        job = prepare_job(odigos, image=image, provisioner_image=prepare_image is not None)
        self.prepare_job = k8s.batch.v1.Job(
            f"{name}-prepare-nodes",
            metadata=job["metadata"],
            spec=job["spec"],
            # Runs once per integration hash (its name): a new image alone must not re-taint nodes.
            # Longer than the Job's own 600s deadline, so a failure reports the Job's reason.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release, *rbac], ignore_changes=["spec"],
                                        delete_before_replace=True,
                                        custom_timeouts=pulumi.CustomTimeouts(create="15m", update="15m")),
        )
        restart = odiglet_restart(odigos)
        k8s.apps.v1.DaemonSetPatch(
            f"{name}-odiglet-restart",
            metadata=restart["metadata"],
            spec=restart["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release, self.prepare_job]),
        )
