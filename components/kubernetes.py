"""A Kubernetes provider for the target cluster, authenticated with `aws eks get-token`."""

from __future__ import annotations

import json

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
