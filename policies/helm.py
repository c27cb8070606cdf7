"""Helm release policies, and the helpers that find Karpenter's and Odigos' releases."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from kubefacts.labels import SUPPORTED_RELEASES

from .model import HELM_RELEASE, UNKNOWN, Resource, Stack, Violation
from .registry import policy

EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
KEEP_ANNOTATION = "helm.sh/resource-policy"


def chart_name(release: Resource) -> str | None:
    """`karpenter` for "karpenter", "oci://public.ecr.aws/karpenter/karpenter" or "repo/karpenter"."""
    chart = release.prop("chart")
    if not isinstance(chart, str) or not chart:
        return None
    last = chart.rstrip("/").rsplit("/", 1)[-1]
    if chart.startswith("oci://") and ":" in last:
        last = last.split(":", 1)[0]
    return last.removesuffix(".tgz")


def releases(stack: Stack, chart: str) -> list[Resource]:
    return [r for r in stack.of_type(HELM_RELEASE) if chart_name(r) == chart]


def karpenter_release(stack: Stack) -> Resource | None:
    found = releases(stack, "karpenter")
    return found[0] if found else None


def karpenter_version(stack: Stack) -> str | None:
    """The Karpenter release the stack pins (its karpenter chart's version), by which the pack
    judges Karpenter objects (kubefacts.validation and its label rules), as offline.checks judges
    a render; None (the newest supported release) when no supported version is pinned or known yet."""
    release = karpenter_release(stack)
    version = release.prop("version") if release is not None else None
    if not isinstance(version, str):  # absent, or UNKNOWN during preview
        return None
    version = version.removeprefix("v")
    return version if version in SUPPORTED_RELEASES else None


def release_label(release: Resource) -> str:
    name = release.prop("name")
    return f"helm release {name if isinstance(name, str) else release.name} ({chart_name(release) or 'chart ?'})"


@policy(
    "helm-chart-version-pinned",
    """Every Helm release pins an exact chart version (1.14.1, not a range, not latest, not
    empty): an unpinned chart upgrades Karpenter (and its CRDs) whenever the repository
    publishes, outside of review and without a preview that shows it.""",
    group="Helm",
)
def chart_version_pinned(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    for release in stack.of_type(HELM_RELEASE):
        version, chart = release.prop("version"), release.prop("chart")
        if version is UNKNOWN or chart is UNKNOWN:
            continue
        if version in (None, "") and isinstance(chart, str) and chart.startswith("oci://"):
            tag = chart.rsplit("/", 1)[-1].partition(":")[2]
            if EXACT_VERSION.match(tag):
                continue
        if version in (None, ""):
            yield Violation(release.urn, f"{release_label(release)} sets no chart version: helm installs the newest")
        elif not isinstance(version, str) or not EXACT_VERSION.match(version.strip()):
            yield Violation(release.urn, f"{release_label(release)} chart version {version!r} is not an exact version "
                                         "(e.g. 1.14.1; no ranges, no 'latest')")


@policy(
    "helm-crds-protected",
    f"""The release that owns Karpenter's CRDs (karpenter-crd) is protected from deletion (Pulumi
    retainOnDelete or protect) and annotates the CRDs {KEEP_ANNOTATION}: keep, and the karpenter
    release then skips CRDs: deleting a CRD deletes every NodePool, NodeClaim and EC2NodeClass
    with it, which drains every Karpenter node in the cluster.""",
    group="Helm",
)
def crds_protected(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    crd_releases = releases(stack, "karpenter-crd")
    for release in crd_releases:
        if release.protect is not True and release.retain_on_delete is False:
            yield Violation(release.urn, f"{release_label(release)} is neither retainOnDelete nor protect: "
                                         "removing it from the program would delete the CRDs and every NodePool")
        annotations = release.prop("values", "additionalAnnotations")
        if annotations is UNKNOWN:
            continue
        keep = annotations.get(KEEP_ANNOTATION) if isinstance(annotations, Mapping) else None
        if keep is UNKNOWN:
            continue
        if keep != "keep":
            yield Violation(release.urn, f"{release_label(release)} does not set additionalAnnotations "
                                         f"{KEEP_ANNOTATION}: keep, so helm uninstall would delete the CRDs")
    if crd_releases:
        for release in releases(stack, "karpenter"):
            skip = release.prop("skipCrds")
            if skip is not UNKNOWN and skip is not True:
                yield Violation(release.urn, f"{release_label(release)} installs CRDs too (skipCrds is not true) while "
                                             "karpenter-crd owns them; set skipCrds: true")


@policy(
    "karpenter-controller-replicas",
    """The Karpenter controller runs at least 2 replicas in production: with one, a node loss
    or an eviction leaves the cluster unable to add capacity or handle interruptions until the
    pod is rescheduled, which may itself need a node Karpenter would have launched.""",
    schema={"minReplicas": {"type": "integer", "minimum": 1, "description": "Fewest controller replicas."}},
    defaults=lambda environment: {"minReplicas": 2},
    group="Helm",
)
def controller_replicas(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    minimum = int(config.get("minReplicas") or 2)
    for release in releases(stack, "karpenter"):
        replicas = release.prop("values", "replicas")
        if replicas is UNKNOWN or replicas is None:
            continue  # None: the chart's default, 2
        if not isinstance(replicas, (int, float)) or isinstance(replicas, bool) or replicas < minimum:
            yield Violation(release.urn, f"{release_label(release)} runs {replicas!r} controller replica(s); "
                                         f"run at least {minimum}")
