"""The provisioner in the cluster: its image (ECR + docker-build), IAM role, RBAC and the advisor.

Pure builders (the image tag, the IAM document, every Kubernetes object) are plain functions,
tested directly; `Provisioner` only declares what they return. Declared only when
`provisioner.enabled` is true (the caller checks it).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build
import pulumi_kubernetes as k8s

from . import iam
from .cluster import ExistingCluster
from .config import PlatformConfig
from .config.provisioner import ProvisionerConfig
from .naming import IAM_ROLE_NAME_MAX, scoped

PROJECT_DIR = Path(__file__).resolve().parents[1]
PROVISIONER_DIR = PROJECT_DIR / "provisioner"
# The folders the image is built from: the provisioner package and the kernel it imports.
IMAGE_SOURCES = (PROJECT_DIR / "kubefacts", PROVISIONER_DIR)
# Relative to the project folder (where Pulumi runs): an absolute path would put the checkout's
# location into the state and show a diff on every other machine. The context is the project
# root, narrowed to IMAGE_SOURCES by provisioner/Dockerfile.dockerignore.
CONTEXT = "."
DOCKERFILE = "provisioner/Dockerfile"
# Left out of the content hash, and (test-enforced) out of the build context by .dockerignore.
HASH_EXCLUDED_DIRS = ("__pycache__", "build", "dist", ".pytest_cache", ".ruff_cache", ".mypy_cache")
HASH_EXCLUDED_DIR_SUFFIXES = (".egg-info",)
HASH_EXCLUDED_FILE_SUFFIXES = (".pyc", ".pyo")

UID = 65532
PORT = 8080
ADVISOR = "provisioner"
IRSA_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
LABELS = {"app.kubernetes.io/name": ADVISOR, "app.kubernetes.io/part-of": "karpenter-platform"}
MANAGED_BY = {"app.kubernetes.io/managed-by": "karpenter-platform"}
READ = ["get", "list", "watch"]
IMAGES_KEPT = 30


# --- the image ---------------------------------------------------------------------------

def content_files(root: Path) -> list[Path]:
    """Every file of the build context that can change the image, in a stable order."""
    files = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(p in HASH_EXCLUDED_DIRS or p.endswith(HASH_EXCLUDED_DIR_SUFFIXES) for p in parts[:-1]):
            continue
        if path.is_file() and not path.name.endswith(HASH_EXCLUDED_FILE_SUFFIXES) and parts[-1] not in HASH_EXCLUDED_DIRS:
            files.append(path)
    return files


def content_hash(*roots: Path) -> str:
    """sha256 over each file's relative path and content: the same sources give the same hash
    on every machine (no timestamps, modes or absolute paths involved). With several folders,
    each path is prefixed with its folder's name."""
    digest = hashlib.sha256()
    for root in roots:
        prefix = f"{root.name}/" if len(roots) > 1 else ""
        for path in content_files(root):
            digest.update((prefix + path.relative_to(root).as_posix()).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def image_tag(content: str, platforms: Iterable[str]) -> str:
    """The image's tag. ECR tags are immutable here, so anything that changes the pushed image
    (the sources, and the platforms it is built for) must change the tag."""
    return hashlib.sha256(f"{content}\0{','.join(sorted(platforms))}".encode()).hexdigest()[:32]


def repository_name(cluster_name: str) -> str:
    """`karpenter-platform/<cluster>/provisioner`, the cluster part reduced to what ECR accepts
    (lower case, single separators between alphanumerics)."""
    cluster = re.sub(r"[^a-z0-9]+", "-", cluster_name.lower()).strip("-") or "cluster"
    return f"karpenter-platform/{cluster}/provisioner"


def lifecycle_policy(kept: int = IMAGES_KEPT) -> dict[str, Any]:
    """Every change pushes a new immutable tag; keep the newest `kept` images (enough to roll back)."""
    return {"rules": [{"rulePriority": 1, "description": f"keep the newest {kept} images",
                       "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": kept},
                       "action": {"type": "expire"}}]}


# --- IAM ---------------------------------------------------------------------------------

def catalog_policy(region: str) -> dict[str, Any]:
    """Read-only: what the live catalog needs (instance types, their zonal offerings, spot
    prices, on-demand prices), nothing that changes anything."""
    return iam.document([
        {"Sid": "ProvisionerCatalogDescribe", "Effect": "Allow",
         "Action": ["ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeSpotPriceHistory"],
         "Resource": ["*"], "Condition": {"StringEquals": {"aws:RequestedRegion": region}}},
        # The Price List API lives in a few regions only (us-east-1 among them): no region condition.
        {"Sid": "ProvisionerCatalogPricing", "Effect": "Allow", "Action": ["pricing:GetProducts"], "Resource": ["*"]},
    ])


def role_name(cluster_name: str) -> str:
    return scoped(cluster_name, IAM_ROLE_NAME_MAX, suffix="-provisioner")


# --- Kubernetes objects ------------------------------------------------------------------

def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**LABELS, **MANAGED_BY}}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


def namespace_manifest(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)}


def service_account_manifest(name: str, namespace: str, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = _meta(name, namespace, **({"annotations": dict(annotations)} if annotations else {}))
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def advisor_rules(mode: str) -> list[dict[str, Any]]:
    """Read what the plan needs; write Events only in advisor mode (metrics-only writes nothing)."""
    rules = [
        {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "persistentvolumes", "pods"],
         "verbs": list(READ)},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": list(READ)},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": list(READ)},
        {"apiGroups": ["storage.k8s.io"], "resources": ["csinodes", "storageclasses"], "verbs": list(READ)},
        {"apiGroups": ["karpenter.sh"], "resources": ["nodeclaims", "nodeoverlays", "nodepools"], "verbs": list(READ)},
        {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": list(READ)},
    ]
    if mode == "advisor":
        rules.append({"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]})
    return rules


def cluster_role_manifest(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}


def cluster_role_binding_manifest(name: str, service_account: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]}


POD_SECURITY = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID,
                "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "allowPrivilegeEscalation": False,
                      "readOnlyRootFilesystem": True, "privileged": False, "capabilities": {"drop": ["ALL"]},
                      "seccompProfile": {"type": "RuntimeDefault"}}
# The image writes nothing at run time; /tmp is the one writable place, for libraries that insist.
TMP_VOLUME = {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}
TMP_MOUNT = {"name": "tmp", "mountPath": "/tmp"}


def _arch_affinity(platforms: Iterable[str]) -> dict[str, Any]:
    """Only nodes whose architecture the image was built for (an amd64 image on a Graviton node
    would not start)."""
    arches = sorted({p.split("/", 1)[1] for p in platforms})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": arches},
                              {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}


def advisor_args(config: ProvisionerConfig, region: str) -> list[str]:
    return ["serve", "--mode", config.mode, "--region", region, "--port", str(PORT),
            "--catalog", "live" if config.live_catalog else "bundled", "--log-level", config.log_level]


def deployment_manifest(config: ProvisionerConfig, *, image: pulumi.Input[str], region: str) -> dict[str, Any]:
    resources = {k: v.model_dump(exclude_none=True) for k, v in
                 (("requests", config.resources.requests), ("limits", config.resources.limits))}
    container = {
        "name": ADVISOR,
        "image": image,
        "args": advisor_args(config, region),
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "AWS_REGION", "value": region},
                {"name": "AWS_STS_REGIONAL_ENDPOINTS", "value": "regional"}],
        "ports": [{"name": "metrics", "containerPort": PORT, "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}, "initialDelaySeconds": 10,
                          "periodSeconds": 20, "timeoutSeconds": 5, "failureThreshold": 3},
        # Ready once every watched kind was listed: before that it would advise on half a cluster.
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "metrics"}, "periodSeconds": 10,
                           "timeoutSeconds": 5, "failureThreshold": 3},
        "resources": resources,
        "securityContext": dict(CONTAINER_SECURITY),
        "volumeMounts": [dict(TMP_MOUNT)],
    }
    pod_spec: dict[str, Any] = {
        "serviceAccountName": ADVISOR,
        "securityContext": dict(POD_SECURITY),
        "affinity": _arch_affinity(config.platforms),
        "containers": [container],
        "volumes": [dict(TMP_VOLUME)],
        "terminationGracePeriodSeconds": 15,
    }
    if config.replicas > 1:
        pod_spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                  "whenUnsatisfiable": "ScheduleAnyway",
                                                  "labelSelector": {"matchLabels": dict(LABELS)}}]
    template_meta = {"labels": dict(LABELS), "annotations": {
        "prometheus.io/scrape": "true", "prometheus.io/port": str(PORT), "prometheus.io/path": "/metrics"}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(ADVISOR, config.namespace),
            "spec": {"replicas": config.replicas, "selector": {"matchLabels": dict(LABELS)},
                     "template": {"metadata": template_meta, "spec": pod_spec}}}


def service_manifest(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(ADVISOR, namespace),
            "spec": {"type": "ClusterIP", "selector": dict(LABELS),
                     "ports": [{"name": "metrics", "port": PORT, "targetPort": "metrics", "protocol": "TCP"}]}}


def network_policy_manifest(namespace: str, scrapers: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingress to the advisor only from the metrics scrapers, only on the metrics port. The
    kubelet's probes come from the node, which NetworkPolicy always admits; egress (the API server,
    AWS) is left open."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(ADVISOR, namespace),
            "spec": {"podSelector": {"matchLabels": dict(LABELS)}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [dict(peer) for peer in scrapers],
                                  "ports": [{"port": PORT, "protocol": "TCP"}]}]}}


def pdb_manifest(namespace: str) -> dict[str, Any]:
    """maxUnavailable 1, not minAvailable 1: with one replica, minAvailable would block every node
    drain (and Karpenter's consolidation) for an advisor nothing depends on."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(ADVISOR, namespace),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(LABELS)}}}


# --- the component -----------------------------------------------------------------------

# kind -> (typed resource, its top-level fields as (manifest key, constructor argument))
_TYPES: dict[str, tuple[type, tuple[tuple[str, str], ...]]] = {
    "Namespace": (k8s.core.v1.Namespace, (("metadata", "metadata"),)),
    "ServiceAccount": (k8s.core.v1.ServiceAccount, (("metadata", "metadata"),)),
    "ClusterRole": (k8s.rbac.v1.ClusterRole, (("metadata", "metadata"), ("rules", "rules"))),
    "ClusterRoleBinding": (k8s.rbac.v1.ClusterRoleBinding,
                           (("metadata", "metadata"), ("roleRef", "role_ref"), ("subjects", "subjects"))),
    "Deployment": (k8s.apps.v1.Deployment, (("metadata", "metadata"), ("spec", "spec"))),
    "Service": (k8s.core.v1.Service, (("metadata", "metadata"), ("spec", "spec"))),
    "PodDisruptionBudget": (k8s.policy.v1.PodDisruptionBudget, (("metadata", "metadata"), ("spec", "spec"))),
    "NetworkPolicy": (k8s.networking.v1.NetworkPolicy, (("metadata", "metadata"), ("spec", "spec"))),
}


def _declare(name: str, kind: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed resource for a builder's manifest. Values that are only known later (the image
    reference, a role ARN) sit inside the dict as Outputs, so everything else stays known at
    preview, where the policy pack reads it."""
    cls, fields = _TYPES[kind]
    return cls(name, opts=opts, **{arg: manifest[key] for key, arg in fields})


class Provisioner(pulumi.ComponentResource):
    """Outputs: `image_ref` (the pushed image with its digest: what the Deployment runs, and what
    the Odigos prepare Job should run), `repository_url`, `image_tag`, `namespace`,
    `service_account`, `role_arn` (None without the live catalog).

    Pass the cluster's Kubernetes provider in `opts` (as for the other components); AWS
    resources use the default AWS provider."""

    def __init__(self, name: str, config: PlatformConfig, cluster: ExistingCluster,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:Provisioner", name, None, opts)
        settings = config.settings.provisioner
        self._name, self._settings, self._cluster = name, settings, cluster
        self._child = child = pulumi.ResourceOptions(parent=self)
        self.namespace = settings.namespace
        self.service_account = ADVISOR

        self._declare_image()
        annotations, identity = self._declare_identity(config)
        namespace = _declare(f"{name}-namespace", "Namespace", namespace_manifest(settings.namespace), child)
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        account = _declare(f"{name}-service-account", "ServiceAccount",
                           service_account_manifest(ADVISOR, settings.namespace, annotations), in_namespace)
        role_name_ = f"karpenter-platform-{ADVISOR}"
        role = _declare(f"{name}-cluster-role", "ClusterRole",
                        cluster_role_manifest(role_name_, advisor_rules(settings.mode)), child)
        binding = _declare(f"{name}-cluster-role-binding", "ClusterRoleBinding",
                           cluster_role_binding_manifest(role_name_, ADVISOR, settings.namespace),
                           pulumi.ResourceOptions(parent=self, depends_on=[role]))
        # Started before its permissions exist, the advisor would only log 403s until they do.
        after = [account, binding] + ([identity] if identity is not None else [])
        deployment_opts = pulumi.ResourceOptions(parent=self, depends_on=[namespace, *after])
        _declare(f"{name}-deployment", "Deployment",
                 deployment_manifest(settings, image=self.image_ref, region=cluster.region), deployment_opts)
        _declare(f"{name}-service", "Service", service_manifest(settings.namespace), in_namespace)
        _declare(f"{name}-pdb", "PodDisruptionBudget", pdb_manifest(settings.namespace), in_namespace)
        _declare(f"{name}-network-policy", "NetworkPolicy",
                 network_policy_manifest(settings.namespace, settings.metrics_scrapers), in_namespace)
        self.register_outputs({"imageRef": self.image_ref, "repositoryUrl": self.repository_url,
                               "namespace": self.namespace})

    def _declare_image(self) -> None:
        name, settings, child = self._name, self._settings, self._child
        repository = aws.ecr.Repository(
            f"{name}-repository",
            name=self._cluster.name.apply(repository_name),
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            force_delete=False,  # deleting the stack must not silently delete the images running
            # The cluster's region, like every regional resource and lookup (not aws:region).
            region=self._cluster.region,
            opts=child,
        )
        aws.ecr.LifecyclePolicy(f"{name}-repository-lifecycle", repository=repository.name,
                                policy=json.dumps(lifecycle_policy()), region=self._cluster.region, opts=child)
        # An ECR token is valid for the registry of the region it was asked in.
        token = aws.ecr.get_authorization_token_output(registry_id=repository.registry_id, region=self._cluster.region,
                                                       opts=pulumi.InvokeOptions(parent=self))
        tag = image_tag(content_hash(*IMAGE_SOURCES), settings.platforms)
        image = docker_build.Image(
            f"{name}-image",
            context=docker_build.BuildContextArgs(location=CONTEXT),
            dockerfile=docker_build.DockerfileArgs(location=DOCKERFILE),
            platforms=[docker_build.Platform(p) for p in settings.platforms],
            push=True,
            # Building on preview would need a Docker engine for every `pulumi preview`.
            build_on_preview=False,
            registries=[docker_build.RegistryArgs(
                address=repository.repository_url.apply(lambda url: url.split("/", 1)[0]),
                # Secret so that the short-lived ECR token never lands in the state in clear.
                username=token.user_name, password=pulumi.Output.secret(token.password))],
            tags=[repository.repository_url.apply(lambda url: f"{url}:{tag}")],
            opts=child,
        )
        self.repository_url: pulumi.Output[str] = repository.repository_url
        self.image_tag = tag
        self.image_ref: pulumi.Output[str] = image.ref

    def _declare_identity(self, config: PlatformConfig) -> tuple[dict[str, pulumi.Output[str]], pulumi.Resource | None]:
        """The read-only catalog role and how the advisor's pod gets it: the SA annotations
        (IRSA) and the resource it must wait for (the Pod Identity association), or nothing."""
        settings, cluster, child, name = self._settings, self._cluster, self._child, self._name
        if not settings.live_catalog:
            self.role_arn = None
            return {}, None
        identity = config.settings.karpenter.identity  # one way of handing out AWS credentials per cluster
        if identity == "podIdentity":
            trust: pulumi.Input[str] = json.dumps(iam.pod_identity_trust())
        else:
            trust = pulumi.Output.all(cluster.partition, cluster.account_id, cluster.oidc_issuer).apply(
                lambda a: json.dumps(iam.irsa_trust(partition=a[0], account_id=a[1], issuer_url=a[2],
                                                    namespace=settings.namespace, service_account=ADVISOR)))
        role = aws.iam.Role(f"{name}-role", name=cluster.name.apply(role_name),
                            description="karpenter-platform provisioner (read-only catalog)", assume_role_policy=trust,
                            permissions_boundary=config.settings.karpenter.permissions_boundary, opts=child)
        aws.iam.RolePolicy(f"{name}-catalog", role=role.name, name="ProvisionerCatalogRead",
                           policy=json.dumps(catalog_policy(cluster.region)), opts=child)
        self.role_arn = role.arn
        if identity == "podIdentity":
            association = aws.eks.PodIdentityAssociation(
                f"{name}-pod-identity", cluster_name=cluster.name, namespace=settings.namespace,
                service_account=ADVISOR, role_arn=role.arn, region=cluster.region, opts=child)
            return {}, association
        return {IRSA_ROLE_ANNOTATION: role.arn}, None
