"""Configurations that render but cannot run are refused with their key path: container requests
above limits (the API server refuses the Deployment halfway through `pulumi up`), a static NodePool
while Karpenter's StaticCapacity gate is off, and `limits.nodes` below `replicas`."""

from __future__ import annotations

import pytest

from components.config import ConfigError
from tests.harness import platform_from


def issues(settings=None, teams=None):
    with pytest.raises(ConfigError) as caught:
        platform_from(settings=settings, teams=teams)
    return [(i.file, i.path, i.message) for i in caught.value.issues]


@pytest.mark.parametrize("section,resources,path,message", [
    ("karpenter", {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
     "karpenter-platform:karpenter.resources", "requests.cpu 2 is above limits.cpu 1"),
    ("karpenter", {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "1536Mi"}},
     "karpenter-platform:karpenter.resources", "requests.memory 2Gi is above limits.memory 1536Mi"),
    ("provisioner", {"requests": {"cpu": "100m", "memory": "2Gi"}},
     "karpenter-platform:provisioner.resources", "requests.memory 2Gi is above limits.memory 1Gi"),
    ("provisioner", {"requests": {"cpu": "1500m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
     "karpenter-platform:provisioner.resources", "requests.cpu 1500m is above limits.cpu 1"),
])
def test_container_requests_above_limits_are_refused(section, resources, path, message):
    """k8s.io/kubernetes pkg/apis/core/validation ValidateResourceRequirements: a request must be
    less than or equal to its limit."""
    [(file, where, text)] = issues(settings={section: {"resources": resources}})
    assert (file, where) == ("stacks/Pulumi.test.yaml", path)
    assert text.startswith(message)


def test_requests_equal_to_limits_are_accepted():
    config = platform_from(settings={"karpenter": {"resources": {"requests": {"cpu": "1000m", "memory": "1Gi"},
                                                                 "limits": {"cpu": "1", "memory": "1024Mi"}}}})
    assert config.settings.karpenter.resources.limits.cpu == "1"


STATIC = {"name": "fixed", "replicas": 3, "limits": {"nodes": "5"}}


def test_static_nodepool_without_the_static_capacity_gate_is_refused():
    """The StaticCapacity gate defaults to false in every supported chart (settings.featureGates)."""
    for gates in ({}, {"staticCapacity": False}):
        [(file, path, message)] = issues(settings={"karpenter": {"featureGates": gates}},
                                         teams={"web": {"nodePools": [STATIC]}})
        assert (file, path) == ("stacks/teams/web.yaml", "nodePools[0].replicas")
        assert message.startswith("a static NodePool needs Karpenter's StaticCapacity feature gate")


def test_static_nodepool_with_the_gate_on_loads():
    config = platform_from(settings={"karpenter": {"featureGates": {"staticCapacity": True}}},
                           teams={"web": {"nodePools": [STATIC]}})
    assert config.teams[0].node_pools[0].replicas == 3


def test_node_limit_below_replicas_is_refused():
    [(file, path, message)] = issues(settings={"karpenter": {"featureGates": {"staticCapacity": True}}},
                                     teams={"web": {"nodePools": [{**STATIC, "replicas": 8}]}})
    assert (file, path) == ("stacks/teams/web.yaml", "nodePools[0].limits")
    assert message.startswith("nodes 5 is below replicas 8")


ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize("requirement,shown", [
    ({"key": ZONE, "operator": "In", "values": ["us-east-1d"]}, "In ['us-east-1d']"),
    ({"key": ZONE, "operator": "NotIn", "values": ["us-east-1a", "us-east-1b", "us-east-1c"]},
     "NotIn ['us-east-1a', 'us-east-1b', 'us-east-1c']"),
    ({"key": ZONE, "operator": "In", "values": ["eu-west-1a"]}, "In ['eu-west-1a']"),
])
def test_zone_requirement_outside_the_clusters_zones_is_refused(requirement, shown):
    """The cluster's zones default to <region>a, b, c (cluster.zones); a pool that admits none of
    them never gets a node (Karpenter finds no subnet), like a pool that admits no instance type."""
    pool = {"name": "pool", "preset": "general", "limits": {"cpu": "10", "memory": "40Gi"},
            "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}, requirement]}
    [(file, path, message)] = issues(teams={"web": {"nodePools": [pool]}})
    assert (file, path) == ("stacks/teams/web.yaml", "nodePools[0].requirements[1]")
    assert message.startswith(f"{ZONE} {shown} admits none of the cluster's zones (us-east-1a, us-east-1b, us-east-1c; "
                              "cluster.zones)")


def test_zone_requirement_within_the_clusters_zones_loads():
    pool = {"name": "pool", "limits": {"cpu": "10", "memory": "40Gi"},
            "requirements": [{"key": ZONE, "operator": "In", "values": ["us-east-1b", "us-east-1d"]}]}
    config = platform_from(teams={"web": {"nodePools": [pool]}})
    assert config.teams[0].node_pools[0].requirements[0].values == ["us-east-1b", "us-east-1d"]
