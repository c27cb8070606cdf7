"""Interruption handling: the SQS queue Karpenter polls and the five EventBridge rules feeding it.

Pure builders (queue policy, rules, names) and the `InterruptionQueue` component declaring them.
The event patterns and the queue policy are the pinned release's, read from the project's data
(components/reference/), exactly upstream's `source` + `detail-type` pairs: a
misspelt detail-type or a different key is accepted by EventBridge and then matches nothing, so
the queue would silently stay empty.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from . import reference
from .arns import sqs_queue_arn
from .iam import POLICY_VERSION, Document, normalised
from .reference.cfn import substitute
from .naming import EVENT_RULE_NAME_MAX, SQS_QUEUE_NAME_MAX, scoped, shorten

# Karpenter only needs a message until it has acted on it; upstream keeps them five minutes.
MESSAGE_RETENTION_SECONDS = 300
TARGET_ID = "KarpenterInterruptionQueueTarget"


@dataclass(frozen=True)
class Rule:
    slug: str
    """Suffix of the rule's name and of its Pulumi resource name."""
    pattern: tuple[tuple[str, tuple[str, ...]], ...]
    """Upstream's event pattern, frozen (see `event_pattern`)."""

    def event_pattern(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.pattern}

    @property
    def detail_type(self) -> str:
        return ", ".join(self.event_pattern().get("detail-type", []))


# Upstream's logical ids -> our names; a release with a rule not listed here fails loudly.
RULE_SLUGS = {
    "ScheduledChangeRule": "health-event",
    "SpotInterruptionRule": "spot-interruption",
    "RebalanceRule": "rebalance",
    "InstanceStateChangeRule": "instance-state-change",
    "CapacityReservationInterruptionRule": "capacity-reservation-interruption",
}


def rules(version: str | None = None) -> tuple[Rule, ...]:
    """The release's EventBridge rules in upstream order (newest release when None)."""
    found = []
    for rule in reference.release(version or reference.newest()).interruption["rules"]:
        if rule["logicalId"] not in RULE_SLUGS:
            raise ValueError(f"Karpenter {version}: EventBridge rule {rule['logicalId']} has no slug")
        pattern = tuple((key, tuple(values)) for key, values in rule["eventPattern"].items())
        found.append(Rule(RULE_SLUGS[rule["logicalId"]], pattern))
    return tuple(found)


RULES = rules()


def queue_name(cluster_name: str) -> str:
    """The cluster name, as upstream names the queue (shortened only past SQS's 80 characters)."""
    return shorten(cluster_name, SQS_QUEUE_NAME_MAX)


def rule_name(cluster_name: str, rule: Rule) -> str:
    """`<cluster>-<slug>`: unique per cluster, so several clusters can share an account and region."""
    return scoped(cluster_name, EVENT_RULE_NAME_MAX, suffix=f"-{rule.slug}")


def queue_policy(queue_arn: str, version: str | None = None) -> Document:
    """Upstream's queue policy: EventBridge (and SQS itself) may send; any request without TLS is denied."""
    policy = substitute(reference.release(version or reference.newest()).interruption["queuePolicy"],
                        {"KarpenterInterruptionQueue.Arn": queue_arn})
    return {"Version": POLICY_VERSION, "Id": policy["Id"], "Statement": [normalised(s) for s in policy["Statement"]]}


class InterruptionQueue(pulumi.ComponentResource):
    """The queue (name = cluster name), its policy, and one rule + target per interruption event.

    Outputs: `queue_name` (what the helm release gets as `settings.interruptionQueue`),
    `queue_arn`, `queue_url`.

    The queue's ARN is built from partition, region, account and the queue's name rather than
    taken from the queue, so the queue policy, the rules' targets and the controller's
    Interruption policy are known at `pulumi preview` (the policy pack judges them there). What
    needs the queue to exist says so with `depends_on`.
    """

    def __init__(self, name: str, *, cluster_name: pulumi.Input[str], region: str,
                 partition: pulumi.Input[str], account_id: pulumi.Input[str], version: str | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:InterruptionQueue", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = pulumi.Output.from_input(cluster_name)
        physical_name = cluster.apply(queue_name)
        queue_arn = pulumi.Output.all(partition, account_id, physical_name).apply(
            lambda a: sqs_queue_arn(a[0], region, a[1], a[2]))
        # region is set on every resource: the controller policy names the queue ARN in the
        # cluster's region, whatever the provider's default region is.
        queue = aws.sqs.Queue(
            f"{name}-queue",
            name=physical_name,
            message_retention_seconds=MESSAGE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            region=region,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-queue-policy",
            queue_url=queue.url,
            policy=queue_arn.apply(lambda arn: json.dumps(queue_policy(arn, version))),
            region=region,
            opts=child,
        )
        self.rules: dict[str, aws.cloudwatch.EventRule] = {}
        for rule in rules(version):
            event_rule = aws.cloudwatch.EventRule(
                f"{name}-{rule.slug}",
                name=cluster.apply(functools.partial(rule_name, rule=rule)),
                description=f"Karpenter interruption handling: {rule.detail_type}",
                event_pattern=json.dumps(rule.event_pattern()),
                region=region,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{rule.slug}-target",
                rule=event_rule.name,
                arn=queue_arn,
                target_id=TARGET_ID,
                region=region,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[queue]),
            )
            self.rules[rule.slug] = event_rule
        self.queue_name: pulumi.Output[str] = queue.name
        self.queue_arn: pulumi.Output[str] = queue_arn
        self.queue_url: pulumi.Output[str] = queue.url
        self.register_outputs({"queueName": self.queue_name, "queueArn": self.queue_arn})

