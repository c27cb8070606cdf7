"""The Kubernetes provider: the cluster's endpoint and CA, credentials from `aws eks get-token`."""

import json

import pytest

from components.kubernetes import kubeconfig
from tests.harness import STACKS, render


def test_kubeconfig_execs_aws_eks_get_token_for_the_cluster():
    config = json.loads(kubeconfig("acme", "https://eks.example", "Q0E=", "eu-west-1"))
    assert config["clusters"] == [{"name": "acme", "cluster": {"server": "https://eks.example",
                                                               "certificate-authority-data": "Q0E="}}]
    assert config["users"][0]["user"] == {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", "acme", "--region", "eu-west-1", "--output", "json"],
        "interactiveMode": "Never"}}
    assert config["current-context"] == "acme"
    assert set(config["users"][0]["user"]) == {"exec"}  # no token or client key: they would land in the state


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_resource_uses_the_cluster_provider(stack):
    capture = render(stack)
    (provider,) = capture.of_type("pulumi:providers:kubernetes")
    config = json.loads(provider.inputs["kubeconfig"])
    assert config["clusters"][0]["cluster"]["server"].startswith("https://PLACEHOLDER-")
    assert config["users"][0]["user"]["exec"]["args"][3] == capture.outputs["clusterName"]
    assert provider.inputs["enableServerSideApply"] == "true"
    kubernetes = [r for r in capture.resources if r.type.startswith("kubernetes:")]
    assert kubernetes
    assert {r.options["provider"].rsplit("::", 1)[0] for r in kubernetes} == {provider.urn}
