"""Cost policies: nodepool-size-capped (advisory) and team-budget (mandatory in prod)."""

import pytest

from tests.policies.analyzer import messages, run
from tests.policies.builders import GENERAL_REQUIREMENTS, nodeclass, nodepool


BUDGET = "karpenter-platform.io/budget-usd-hour"
CAP = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["33"]}


# --- nodepool-size-capped ---

@pytest.mark.slow
def test_uncapped_pool_is_flagged_with_its_largest_type():
    [message] = messages("nodepool-size-capped", [nodepool(), nodeclass()])
    assert message.startswith("NodePool web-api has no size cap: it admits up to 384 vCPU")
    assert "karpenter.k8s.aws/instance-cpu Lt 33" in message


def test_capped_pool_passes():
    assert run("nodepool-size-capped", [nodepool(requirements=GENERAL_REQUIREMENTS + [CAP]), nodeclass()]) == []


def test_size_capped_by_instance_family_passes_without_an_instance_cpu_key():
    family = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"]}]
    assert run("nodepool-size-capped", [nodepool(requirements=family), nodeclass()]) == []


def test_own_instance_cpu_requirement_opts_out():
    opt_out = GENERAL_REQUIREMENTS + [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Exists"}]
    assert run("nodepool-size-capped", [nodepool(requirements=opt_out), nodeclass()]) == []


def test_size_cap_threshold_is_configurable():
    pools = [nodepool(requirements=GENERAL_REQUIREMENTS + [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt",
                                                              "values": ["200"]}][:-1] + [
        {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["4xlarge"]}]), nodeclass()]
    assert run("nodepool-size-capped", pools) == []
    assert len(messages("nodepool-size-capped", pools, config={"maxVcpu": 8})) == 1


# --- team-budget ---

def _budgeted(name, budget, limits):
    return nodepool(name=name, requirements=GENERAL_REQUIREMENTS + [CAP], limits=limits,
                    annotations={BUDGET: budget, "karpenter-platform.io/owner": "#web"})


def test_team_over_budget_fails_naming_the_pools():
    pools = [_budgeted("web-api", "10", {"cpu": "100", "memory": "400Gi"}),
             _budgeted("web-frontend", "10", {"cpu": "200", "memory": "800Gi"}), nodeclass()]
    [message] = messages("team-budget", pools)
    assert message.startswith("team web: its NodePools can cost up to $")
    assert "above its budget of $10.00/h" in message
    assert message.index("web-frontend $") < message.index("web-api $")  # dearest first


def test_team_within_budget_passes():
    pools = [_budgeted("web-api", "500", {"cpu": "100", "memory": "400Gi"}), nodeclass()]
    assert run("team-budget", pools) == []


def test_team_without_budget_is_not_judged():
    assert run("team-budget", [nodepool(limits={"cpu": "1000", "memory": "4Ti"}), nodeclass()]) == []


def test_budget_annotation_not_a_number_fails():
    [message] = messages("team-budget", [_budgeted("web-api", "lots", {"cpu": "1", "memory": "1Gi"}), nodeclass()])
    assert "is not a number of USD/hour" in message


@pytest.mark.parametrize("environment, level", [("dev", "advisory"), ("staging", "advisory"), ("prod", "mandatory")])
def test_budget_is_mandatory_in_prod_only(environment, level):
    from policies.levels import default_level
    assert default_level("team-budget", environment) == level
    assert default_level("nodepool-size-capped", environment) == "advisory"
