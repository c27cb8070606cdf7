"""The interruption queue and its five EventBridge rules, against upstream's template."""

import json

import pytest

from components import interruption
from components.interruption import RULES, InterruptionQueue
from tests import upstream
from tests.harness import run_component

QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:acme-dev"
LONG_CLUSTER = "c" * 100


def upstream_queue():
    return upstream.facts()["interruption"]["queue"]


def upstream_rules():
    return upstream.facts()["interruption"]["eventBridgeRules"]


@pytest.fixture(scope="module")
def declared():
    return run_component(lambda: InterruptionQueue("iq", cluster_name="acme-dev", region="eu-west-1",
                                                           partition="aws", account_id="123456789012"), region="eu-west-1")


def test_rules_event_patterns_equal_upstreams_five_in_order():
    assert [rule.event_pattern() for rule in RULES] == [r["eventPattern"] for r in upstream_rules()]


def test_queue_policy_equals_upstream_with_queue_arn_substituted():
    expected = upstream.substitute(upstream_queue()["queuePolicy"], {"${KarpenterInterruptionQueue.Arn}": QUEUE_ARN})
    policy = interruption.queue_policy(QUEUE_ARN)
    assert policy["Id"] == expected["Id"]
    assert policy["Version"] == "2012-10-17"
    assert policy["Statement"] == expected["statements"]


def test_queue_policy_denies_requests_without_tls():
    deny = interruption.queue_policy(QUEUE_ARN)["Statement"][1]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", ["sqs:*"])
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": False}}


def test_queue_name_is_the_cluster_name_as_upstream():
    assert interruption.queue_name("acme-dev") == upstream_queue()["queueName"].replace("${ClusterName}", "acme-dev")


def test_queue_name_fits_80_characters_with_100_character_cluster_name():
    assert len(interruption.queue_name(LONG_CLUSTER)) == 80


def test_rule_names_are_unique_per_cluster_and_fit_64_characters():
    for cluster in ("acme-dev", LONG_CLUSTER):
        names = [interruption.rule_name(cluster, rule) for rule in RULES]
        assert len(set(names)) == 5
        assert all(len(name) <= 64 for name in names)
    assert interruption.rule_name("acme-dev", RULES[1]) == "acme-dev-spot-interruption"
    assert interruption.rule_name(LONG_CLUSTER, RULES[4]).endswith("-capacity-reservation-interruption")


def test_queue_declared_with_upstream_retention_and_sse(declared):
    [queue] = declared.of_type("aws:sqs/queue:Queue")
    assert queue.inputs["name"] == "acme-dev"
    assert queue.inputs["messageRetentionSeconds"] == upstream_queue()["messageRetentionPeriodSeconds"] == 300
    assert queue.inputs["sqsManagedSseEnabled"] is upstream_queue()["sqsManagedSseEnabled"] is True


def test_queue_policy_declared_on_the_queue_url_naming_the_queue_arn(declared):
    [policy] = declared.of_type("aws:sqs/queuePolicy:QueuePolicy")
    assert policy.inputs["queueUrl"] == "https://sqs.eu-west-1.amazonaws.com/123456789012/acme-dev"
    assert json.loads(policy.inputs["policy"]) == interruption.queue_policy(QUEUE_ARN)


def test_rules_declared_with_exact_patterns_and_unique_names(declared):
    rules = {r.name: r.inputs for r in declared.of_type("aws:cloudwatch/eventRule:EventRule")}
    assert [json.loads(rules[f"iq-{rule.slug}"]["eventPattern"]) for rule in RULES] == \
        [r["eventPattern"] for r in upstream_rules()]
    assert sorted(i["name"] for i in rules.values()) == sorted(f"acme-dev-{rule.slug}" for rule in RULES)


def test_each_rule_targets_the_queue_arn(declared):
    targets = {t.name: t.inputs for t in declared.of_type("aws:cloudwatch/eventTarget:EventTarget")}
    assert len(targets) == 5
    for rule, reference in zip(RULES, upstream_rules(), strict=True):
        target = targets[f"iq-{rule.slug}-target"]
        [expected] = upstream.substitute(reference["targets"], {"${KarpenterInterruptionQueue.Arn}": QUEUE_ARN})
        assert (target["arn"], target["targetId"], target["rule"]) == (expected["Arn"], expected["Id"], f"acme-dev-{rule.slug}")


def test_interruption_resources_are_children_in_the_cluster_region(declared):
    [component] = declared.of_type("karpenter-platform:index:InterruptionQueue")
    children = [r for r in declared.resources if r is not component]
    assert len(children) == 1 + 1 + 5 + 5
    assert all(r.parent == component.urn for r in children)
    assert all(r.inputs["region"] == "eu-west-1" for r in children)
