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



GPU_POOL = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5", "g6", "p4d", "p5"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
ML_LARGEST_POD = {"karpenter-platform.io/largest-pod": '{"cpu": "32", "memory": "120Gi", "nvidia.com/gpu": "4"}'}


def gpu_pool(requirements=GPU_POOL):
    return nodepool("ml-training-gpu", "ml-training", requirements=requirements, annotations=ML_LARGEST_POD,
                    taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                    limits={"cpu": "384", "memory": "3000Gi", "nvidia.com/gpu": "32"})


def test_suggested_cap_still_holds_the_declared_largest_pod():
    """stacks/teams/ml-training.yaml declares a 32-CPU, 4-GPU largest pod: `instance-cpu Lt 33` would
    leave only 32-vCPU types (after kubelet reservations, under 32 CPUs), which
    nodepool-fits-largest-pod refuses in staging and prod; the advice is the smallest cap that holds."""
    [message] = messages("nodepool-size-capped", [gpu_pool(), nodeclass()])
    assert "Lt 33" not in message
    assert message.endswith("add karpenter.k8s.aws/instance-cpu Lt 49 (or any requirement on "
                            "karpenter.k8s.aws/instance-cpu to opt out)")
    capped = GPU_POOL + [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["49"]}]
    for environment in ("dev", "staging", "prod"):
        assert run("nodepool-fits-largest-pod", [gpu_pool(capped), nodeclass()], environment=environment) == []
    too_small = GPU_POOL + [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["33"]}]
    assert len(run("nodepool-fits-largest-pod", [gpu_pool(too_small), nodeclass()], environment="prod")) == 1


def test_no_cap_within_max_vcpu_holds_the_largest_pod_says_so():
    [message] = messages("nodepool-size-capped", [gpu_pool(), nodeclass()], config={"maxVcpu": 40})
    assert "no cap up to 40 vCPU holds in every environment (karpenter.k8s.aws/instance-cpu Lt 33 would fail " \
           "staging: nodepool-fits-largest-pod:" in message
    assert "Lt 41" not in message

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


def test_team_budget_compares_the_cents_it_prints(monkeypatch):
    """A worst case of $5.8612/h against a budget of $5.86 read "$5.86/h ... above its budget of
    $5.86/h": the comparison is now made in the cents the message shows."""
    import policies.cost
    monkeypatch.setattr(policies.cost, "pool_worst_case", lambda stack, pool: 5.8612)
    pools = [_budgeted("web-api", "5.86", {"cpu": "1", "memory": "1Gi"}), nodeclass()]
    assert run("team-budget", pools) == []
    [message] = messages("team-budget", [_budgeted("web-api", "5.85", {"cpu": "1", "memory": "1Gi"}), nodeclass()])
    assert "cost up to $5.86/h at their limits, above its budget of $5.85/h" in message


@pytest.mark.parametrize("raw", ["inf", "Infinity", "nan"])
def test_budget_annotation_not_finite_fails(raw):
    [message] = messages("team-budget", [_budgeted("web-api", raw, {"cpu": "1", "memory": "1Gi"}), nodeclass()])
    assert "is not a number of USD/hour" in message
