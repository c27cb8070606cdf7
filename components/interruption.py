"""Interruption handling: the SQS queue Karpenter polls and the five EventBridge rules feeding it.

Pure builders (queue policy, rules, names) and the `InterruptionQueue` component declaring them.
The event patterns are exactly upstream's `source` + `detail-type` pairs (Karpenter v1.14.1): a
misspelt detail-type or a different key is accepted by EventBridge and then matches nothing, so
the queue would silently stay empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from .arns import sqs_queue_arn
from .iam import POLICY_VERSION, Document
from .naming import EVENT_RULE_NAME_MAX, SQS_QUEUE_NAME_MAX, scoped, shorten

# Karpenter only needs a message until it has acted on it; upstream keeps them five minutes.
MESSAGE_RETENTION_SECONDS = 300
TARGET_ID = "KarpenterInterruptionQueueTarget"


@dataclass(frozen=True)
class Rule:
    slug: str
    """Suffix of the rule's name and of its Pulumi resource name."""
    source: str
    detail_type: str

    def event_pattern(self) -> dict[str, list[str]]:
        return {"source": [self.source], "detail-type": [self.detail_type]}


RULES = (
    Rule("health-event", "aws.health", "AWS Health Event"),
    Rule("spot-interruption", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
    Rule("rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
    Rule("instance-state-change", "aws.ec2", "EC2 Instance State-change Notification"),
    Rule("capacity-reservation-interruption", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
)


def queue_name(cluster_name: str) -> str:
    """The cluster name, as upstream names the queue (shortened only past SQS's 80 characters)."""
    return shorten(cluster_name, SQS_QUEUE_NAME_MAX)


def rule_name(cluster_name: str, rule: Rule) -> str:
    """`<cluster>-<slug>`: unique per cluster, so several clusters can share an account and region."""
    return scoped(cluster_name, EVENT_RULE_NAME_MAX, suffix=f"-{rule.slug}")


def queue_policy(queue_arn: str) -> Document:
    """EventBridge (and SQS itself) may send; any request without TLS is denied."""
    return {
        "Version": POLICY_VERSION,
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": ["sqs:SendMessage"],
                "Resource": [queue_arn],
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["sqs:*"],
                "Resource": [queue_arn],
                "Condition": {"Bool": {"aws:SecureTransport": False}},
            },
        ],
    }


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
                 partition: pulumi.Input[str], account_id: pulumi.Input[str],
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
            policy=queue_arn.apply(lambda arn: json.dumps(queue_policy(arn))),
            region=region,
            opts=child,
        )
        self.rules: dict[str, aws.cloudwatch.EventRule] = {}
        for rule in RULES:
            event_rule = aws.cloudwatch.EventRule(
                f"{name}-{rule.slug}",
                name=cluster.apply(lambda c, r=rule: rule_name(c, r)),
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

