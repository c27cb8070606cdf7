"""A Kubernetes provider for the target cluster, authenticated with `aws eks get-token`."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .cluster import ExistingCluster


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig whose credential is an exec of the AWS CLI (so no token lands in state)."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [{
            "name": cluster_name,
            "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "aws",
                "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
                "interactiveMode": "Never",
            }},
        }],
    }, sort_keys=True)


def cluster_provider(name: str, cluster: ExistingCluster, opts: pulumi.ResourceOptions | None = None) -> k8s.Provider:
    config = pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority).apply(
        lambda args: kubeconfig(args[0], args[1], args[2], cluster.region)
    )
    return k8s.Provider(name, kubeconfig=config, enable_server_side_apply=True, opts=opts)


def custom_resource(kind_prefix: str, manifest: Mapping[str, Any], *, parent: pulumi.Resource,
                    depends_on: Sequence[pulumi.Resource] = (), delete_timeout: str | None = None,
                    ) -> k8s.apiextensions.CustomResource:
    """One Karpenter object as a child of `parent`, named `<kind_prefix>-<metadata.name>`.

    The resource name is the object's identity in state: changing it replaces the object on
    `pulumi up`. `depends_on` goes on the object itself, because children do not inherit a
    component's dependencies and `pulumi destroy` deletes in their reverse."""
    timeouts = pulumi.CustomTimeouts(delete=delete_timeout) if delete_timeout else None
    return k8s.apiextensions.CustomResource(
        f"{kind_prefix}-{manifest['metadata']['name']}",
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on), custom_timeouts=timeouts),
    )


def custom_resources(kind_prefix: str, manifests: Iterable[Mapping[str, Any]], *, parent: pulumi.Resource,
                     depends_on: Sequence[pulumi.Resource] = (), delete_timeout: str | None = None,
                     ) -> dict[str, k8s.apiextensions.CustomResource]:
    """`custom_resource` for each manifest, in order, by metadata.name."""
    return {manifest["metadata"]["name"]: custom_resource(kind_prefix, manifest, parent=parent, depends_on=depends_on,
                                                          delete_timeout=delete_timeout)
            for manifest in manifests}
