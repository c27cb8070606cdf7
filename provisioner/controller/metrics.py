"""The advisor's Prometheus metrics, in a registry of their own (tests build as many as they like).

Label values are bounded: NodePool names are few by construction, and reasons go through
`reason_label`, which folds numbers and caps the number of distinct values, so a reason that
embeds a pod's own figures cannot explode the series count.
"""
from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubefacts.platform import TEAM_LABEL

PREFIX = "provisioner"
NO_TEAM = "none"
MAX_REASONS = 30
OTHER = "other"
_NUMBER = re.compile(r"\d+(\.\d+)?")
_SPACE = re.compile(r"\s+")


def fold_reason(reason: str) -> str:
    """A reason without its figures: 'needs 96 cpu, largest offers 64' -> 'needs N cpu, largest offers N'."""
    text = _SPACE.sub(" ", _NUMBER.sub("N", str(reason))).strip()
    return text[:120] or "unknown"


class ReasonLabels:
    """Maps reasons to at most MAX_REASONS label values (then `other`), stable for the process."""

    def __init__(self, limit: int = MAX_REASONS):
        self.limit = limit
        self._known: set[str] = set()

    def __call__(self, reason: str) -> str:
        folded = fold_reason(reason)
        if folded in self._known:
            return folded
        if len(self._known) < self.limit:
            self._known.add(folded)
            return folded
        return OTHER


M = TypeVar("M", Gauge, Counter, Histogram)


def _declare(kind: type[M], registry: CollectorRegistry) -> Callable[..., M]:
    """A declarer of `kind` metrics in `registry`: (name without the provisioner_ prefix, help,
    *label names, **options such as buckets)."""
    def declare(name: str, documentation: str, *labels: str, **options: Any) -> M:
        return kind(f"{PREFIX}_{name}", documentation, labels, registry=registry, **options)
    return declare


def _replace(gauge: Gauge, values: Mapping[Any, float], *labels: str) -> None:
    """Every series of a labelled gauge replaced by `values` (label value, or a tuple of them for
    several labels -> value): series no longer present go away."""
    gauge.clear()
    for key, value in sorted(values.items()):
        gauge.labels(**dict(zip(labels, key if isinstance(key, tuple) else (key,)))).set(value)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None, clock: Callable[[], float] = time.time):
        self.registry = registry or CollectorRegistry()
        self.clock = clock
        gauge, counter = _declare(Gauge, self.registry), _declare(Counter, self.registry)
        self.reason_label = ReasonLabels()
        self.pending_pods = gauge("pending_pods", "Pods Pending with PodScheduled=False/Unschedulable at the last plan.")
        self.unschedulable_pods = gauge("unschedulable_pods",
                                        "Pending pods no NodePool can schedule, by reason (numbers folded to N).", "reason")
        self.plan_hourly_price = gauge("plan_hourly_price_usd", "Hourly price of every NodeClaim the last plan would launch.")
        self.nodepool_hourly_cost = gauge("nodepool_projected_hourly_cost_usd",
                                          "Hourly price of the NodeClaims the last plan would launch, per NodePool.",
                                          "nodepool")
        self.team_hourly_cost = gauge("team_projected_hourly_cost_usd",
                                      "Hourly price of the NodeClaims the last plan would launch, per team "
                                      f"(NodePool label {TEAM_LABEL}; pools without it count as team \"none\").", "team")
        self.nodepool_nodeclaims = gauge("nodepool_planned_nodeclaims",
                                         "NodeClaims the last plan would launch, per NodePool.", "nodepool")
        self.catalog_age = gauge("catalog_age_seconds",
                                 "Age of the instance-type catalog the plans use (its prices and offerings).")
        self.catalog_info = gauge("catalog_info",
                                  "1 for the catalog source in use: live (AWS APIs) or bundled (shipped in the image).",
                                  "source")
        self.malformed_objects = counter("malformed_objects",
                                         "Watched objects skipped because the advisor or the core could not use them.",
                                         "kind")
        self.api_failures = counter("api_failures", "Failed list/watch calls by kind and HTTP status (410 = expired "
                                    "watch, relisted; 0 = no response).", "kind", "operation", "code")
        self.events = counter("events", "Pod events by outcome: created, exists (already recorded, e.g. before a "
                              "restart), refreshed, deduplicated, rate_limited, failed.", "result")
        self.plans = counter("plans", "Plans run, by result (ok, error, timeout).", "result")
        self.plan_duration = _declare(Histogram, self.registry)(
            "plan_duration_seconds", "Time to plan one batch.", buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.last_plan = gauge("last_plan_timestamp_seconds", "When the last plan finished (Unix time).")
        self._catalog_as_of: float | None = None
        self.catalog_age.set_function(self._age)
        self.consolidation = ConsolidationMetrics(self.registry, clock)

    def _age(self) -> float:
        return max(0.0, self.clock() - self._catalog_as_of) if self._catalog_as_of is not None else float("nan")

    def set_catalog(self, source: str, as_of: float | None) -> None:
        self.catalog_info.clear()
        self.catalog_info.labels(source=source).set(1)
        self._catalog_as_of = as_of

    def observe_plan(self, *, pending: int, unschedulable_reasons: Iterable[str], nodeclaims: Iterable[dict],
                     hourly_price: float, teams: Mapping[str, str] | None = None) -> None:
        """Replace every plan gauge (series of NodePools and reasons no longer present go away)."""
        self.pending_pods.set(pending)
        reasons: dict[str, int] = defaultdict(int)
        for reason in unschedulable_reasons:
            reasons[self.reason_label(reason)] += 1
        _replace(self.unschedulable_pods, reasons, "reason")
        cost: dict[str, float] = defaultdict(float)
        claims: dict[str, int] = defaultdict(int)
        for claim in nodeclaims:
            pool = str(claim.get("nodepool") or "unknown")
            cost[pool] += float(claim.get("price_usd_hour") or 0.0)
            claims[pool] += 1
        self.nodepool_hourly_cost.clear()
        self.nodepool_nodeclaims.clear()
        by_team: dict[str, float] = defaultdict(float)
        for pool in sorted(claims):
            self.nodepool_hourly_cost.labels(nodepool=pool).set(round(cost[pool], 6))
            self.nodepool_nodeclaims.labels(nodepool=pool).set(claims[pool])
            by_team[(teams or {}).get(pool) or NO_TEAM] += cost[pool]
        _replace(self.team_hourly_cost, {team: round(cost, 6) for team, cost in by_team.items()}, "team")
        self.plan_hourly_price.set(round(hourly_price, 6))
        self.last_plan.set(self.clock())


class ConsolidationMetrics:
    """The consolidation what-if (provisioner.disruption): what Karpenter would start now and why
    the other nodes stay. Causes are a fixed, small set (provisioner.disruption.causes)."""

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.time):
        self.clock = clock
        gauge = _declare(Gauge, registry)
        self.candidates = gauge("consolidation_candidate_nodes",
                                "Nodes eligible for each disruption method at the last consolidation what-if "
                                "(emptiness, multi-node, single-node; as Karpenter's eligible_nodes).", "method")
        self.action_nodes = gauge("consolidation_action_nodes",
                                  "Nodes in the command Karpenter would start now, by kind (delete, replace) and "
                                  "reason (empty, underutilized).", "kind", "reason")
        self.blocked = gauge("consolidation_blocked_nodes",
                             "Karpenter-managed nodes left alone, by cause (do-not-disrupt, pdb, budget, policy, "
                             "no-cheaper-replacement, waits-next-pass, ...).", "cause")
        self.savings = gauge("consolidation_savings_usd_hour", "Hourly savings of the command Karpenter would start now.")
        self.price = gauge("consolidation_hourly_price_usd",
                           "Hourly price of the Karpenter-managed nodes, before and after that command.", "when")
        self.runs = _declare(Counter, registry)("consolidations",
                                                "Consolidation what-ifs run, by result (ok, error, timeout).", "result")
        self.last = gauge("last_consolidation_timestamp_seconds", "When the last consolidation what-if finished (Unix time).")

    def observe(self, result: dict, causes: Iterable[str]) -> None:
        """Replace every consolidation gauge with `result` (the `consolidate -o json` shape plus
        `candidates`, method -> eligible nodes); `causes`: one per blocked node."""
        _replace(self.candidates, result.get("candidates") or {}, "method")
        nodes: dict = defaultdict(int)
        for action in result.get("actions") or []:
            nodes[(action["kind"], action["reason"])] += len(action["nodes"])
        _replace(self.action_nodes, nodes, "kind", "reason")
        by_cause: dict = defaultdict(int)
        for cause in causes:
            by_cause[cause] += 1
        _replace(self.blocked, by_cause, "cause")
        self.savings.set(round(sum(a["savings_usd_hour"] for a in result.get("actions") or []), 6))
        summary = result.get("summary") or {}
        self.price.labels(when="before").set(summary.get("price_usd_hour_before", 0.0))
        self.price.labels(when="after").set(summary.get("price_usd_hour_after", 0.0))
        self.runs.labels(result="ok").inc()
        self.last.set(self.clock())


def pool_teams(nodepools: Iterable[Any]) -> dict[str, str]:
    """NodePool name -> team label, from NodePool objects (malformed ones are skipped)."""
    out: dict[str, str] = {}
    for obj in nodepools:
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            continue
        spec = obj.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        template_meta = template.get("metadata") if isinstance(template, dict) else None
        template_labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
        for labels in (template_labels, metadata.get("labels")):
            if isinstance(labels, dict) and isinstance(labels.get(TEAM_LABEL), str):
                out[metadata["name"]] = labels[TEAM_LABEL]
                break
    return out
