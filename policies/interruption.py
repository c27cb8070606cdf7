"""Interruption handling: the queue Karpenter reads exists and receives all five event kinds."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .helm import karpenter_release, release_label
from .model import EVENT_RULE, EVENT_TARGET, SQS_QUEUE, UNKNOWN, Resource, Stack, Violation, as_list, json_document
from .registry import policy

# (source, detail-type) pairs of Karpenter's getting-started template, v1.14.1.
REQUIRED_EVENTS = (
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
)


def _queue_name_of_arn(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[5] if len(parts) >= 6 and parts[0] == "arn" and parts[2] == "sqs" else None


def _rule_names(rule: Resource) -> set[str]:
    names = {rule.name}
    if isinstance(rule.prop("name"), str):
        names.add(rule.prop("name"))
    return names


def _covers(rule: Resource, source: str, detail_type: str) -> bool | None:
    try:
        pattern = json_document(rule.prop("eventPattern"))
    except ValueError:
        return False
    if pattern is UNKNOWN:
        return None
    if not isinstance(pattern, Mapping):
        return False
    sources = as_list(pattern.get("source"))
    types = as_list(pattern.get("detail-type"))
    return (not sources or source in sources) and (not types or detail_type in types)


@policy(
    "interruption-queue-wired",
    """The SQS queue named in the karpenter release's settings.interruptionQueue exists in the
    stack and is the target of all five EventBridge rules (AWS Health Event, EC2 Spot Instance
    Interruption Warning, EC2 Instance Rebalance Recommendation, EC2 Instance State-change
    Notification, EC2 Capacity Reservation Instance Interruption Warning): a missing rule means
    Karpenter never hears of that interruption and pods die with the node instead of draining.
    A release that names no queue while the stack routes the events to one is refused too.""",
    group="Interruption",
)
def queue_wired(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    release = karpenter_release(stack)
    if release is None:
        return
    queue_name = release.prop("values", "settings", "interruptionQueue")
    queues = stack.of_type(SQS_QUEUE)
    if queue_name is UNKNOWN:
        return
    if not queue_name:
        targeted = [q for q in queues if isinstance(q.prop("name"), str)
                    and any(_queue_name_of_arn(str(t.prop("arn"))) == q.prop("name") for t in stack.of_type(EVENT_TARGET))]
        if targeted:
            yield Violation(release.urn, f"{release_label(release)} sets no settings.interruptionQueue although the "
                                         f"stack sends interruption events to queue {targeted[0].prop('name')!r}: "
                                         "Karpenter would never read them")
        return  # interruption handling off
    queue = next((q for q in queues if q.prop("name") == queue_name), None)
    if queue is None:
        if any(q.prop("name") is UNKNOWN for q in queues):
            return
        yield Violation(release.urn, f"{release_label(release)} reads interruption queue {queue_name!r}, "
                                     "which this stack does not declare")
        return
    rules = stack.of_type(EVENT_RULE)
    targets = stack.of_type(EVENT_TARGET)
    missing: list[str] = []
    for source, detail_type in REQUIRED_EVENTS:
        verdicts: list[bool | None] = []
        for rule in rules:
            covers = _covers(rule, source, detail_type)
            if covers is None:
                verdicts.append(None)
                continue
            if not covers:
                continue
            for target in targets:
                verdicts.append(_targets_queue(stack, target, rule, queue))
        if True in verdicts:
            continue
        if None in verdicts:
            continue  # cannot judge yet
        missing.append(detail_type)
    if missing:
        yield Violation(queue.urn, f"interruption queue {queue_name!r} is not the target of a rule for: "
                                   f"{'; '.join(missing)}")


def _targets_queue(stack: Stack, target: Resource, rule: Resource, queue: Resource) -> bool | None:
    """Whether `target` sends `rule`'s events to `queue` (None: cannot tell yet)."""
    rule_ref, arn = target.prop("rule"), target.prop("arn")
    if rule in stack.sources(target, "rule"):
        pass
    elif rule_ref is UNKNOWN or rule.prop("name") is UNKNOWN:
        return None
    elif rule_ref not in _rule_names(rule):
        return False
    if arn is UNKNOWN:
        return True if queue in stack.sources(target, "arn") else None
    return isinstance(arn, str) and _queue_name_of_arn(arn) == queue.prop("name")
