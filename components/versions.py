"""The version gate: config the pinned Karpenter release does not support, with the first release
that does.

Nothing here lists fields by hand. The objects the stack would apply are built by the pure
builders (NodePools, EC2NodeClasses, the Odigos NodeOverlay, the karpenter chart values) and
checked against the pinned release's CRDs (schema + CEL) and chart defaults from the project's
data (components/reference/). A problem that a later supported release does not have is a
version problem: it is reported with the config file and key path that produced it (found by
matching the object's field path against the config's key paths) and the first release without
it. Problems every release has are left to the render's checks (they are not about versions).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterator

from . import reference
from .config.errors import ConfigIssue
from .config.loader import NAMESPACE, stack_file
from .config.stack import PlatformConfig

# jsonschema's additionalProperties message: one violation per unexpected field.
_UNEXPECTED = re.compile(r"^Additional properties are not allowed \((.*) (?:was|were) unexpected\)$")
_INDEX = re.compile(r"\[\d+\]")


def expanded_violations(violations: list[Any]) -> dict[str, str]:
    """Violations as {path: message}, an unknown-fields message split into one path per field."""
    found: dict[str, str] = {}
    for violation in violations:
        match = _UNEXPECTED.match(violation.message)
        if match:
            for name in re.findall(r"'([^']+)'", match.group(1)):
                found.setdefault(f"{violation.path}.{name}" if violation.path else name, "unknown field")
        else:
            found.setdefault(violation.path, violation.message)
    return found


@functools.lru_cache(maxsize=4096)
def _violations(version: str, manifest_json: str) -> dict[str, str]:
    # Cached by content: the same objects are checked on every load (tests, planner, preview).
    from . import crds  # jsonschema and cel: only once a config reaches the gate

    return expanded_violations(crds.validator_for(version).validate(json.loads(manifest_json)))


def violations(manifest: dict[str, Any], version: str) -> dict[str, str]:
    """`{object path: message}` of `manifest` under `version`'s CRDs (cached by content)."""
    return _violations(version, json.dumps(manifest, sort_keys=True))


def manifest_gaps(manifest: dict[str, Any], version: str) -> list[tuple[str, str, str]]:
    """`(object path, message, first release without the problem)` for each problem of `manifest`
    under `version` that some later supported release does not have."""
    pinned = violations(manifest, version)
    if not pinned:
        return []
    later = [v for v in reference.supported() if reference.order(v) > reference.order(version)]
    remaining = dict(pinned)
    gaps = []
    for candidate in later:
        present = violations(manifest, candidate)
        for path in [p for p in remaining if p not in present]:
            gaps.append((path, remaining.pop(path), candidate))
    return gaps


def _leaf_paths(value: Any, display: str, names: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    yield names, display
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaf_paths(sub, f"{display}.{key}" if display else str(key), (*names, str(key)))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield from _leaf_paths(sub, f"{display}[{index}]", names)


def config_path(object_path: str, config: Any, root: str) -> str:
    """The key path of `config` (a dict as the user writes it, at `root`) that produced the object
    field at `object_path`: the one whose key names end the object path's longest; `root` when
    none matches. List indices are not compared (presets and generated entries shift them)."""
    wanted = tuple(p for p in _INDEX.sub("", object_path).split(".") if p)
    best, best_length = root, 0
    for names, display in _leaf_paths(config, root, ()):
        length = 0
        while length < min(len(names), len(wanted)) and names[-1 - length] == wanted[-1 - length]:
            length += 1
        if length and length == len(names) and length > best_length:
            best, best_length = display, length
    return best


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _message(version: str, first: str, what: str) -> str:
    return f"not supported by Karpenter {version} (karpenter.version); first supported in {first} ({what})"


def version_issues(platform: PlatformConfig, version: str | None = None) -> list[ConfigIssue]:
    """Every piece of the stack's config that Karpenter `version` (the stack's own when None) refuses."""
    # The builders import the Pulumi SDK: loaded here, once a config passed the model checks, so
    # that a refused stack file is reported without paying for it (not to dodge a cycle: nothing
    # below components.config imports this module).
    from . import helm_values
    from .karpenter import controller_chart_values
    from .nodeclasses import nodeclass_manifest
    from .nodepools import nodepool_manifests
    from .odigos import node_overlay

    version = version or platform.settings.karpenter.version
    settings = platform.settings
    display_stack = stack_file(platform.stack)
    issues: list[ConfigIssue] = []
    # nodepool_manifests yields one object per (team, pool), in that order.
    owners = [(team, index, pool) for team in platform.teams for index, pool in enumerate(team.node_pools)]
    manifests = nodepool_manifests(platform)
    for (team, index, pool), manifest in zip(owners, manifests, strict=True):
        for path, message, first in manifest_gaps(manifest, version):
            where = config_path(path, _dump(pool), f"nodePools[{index}]")
            issues.append(ConfigIssue(f"stacks/teams/{team.name}.yaml", where,
                                      _message(version, first, f"NodePool {path}: {message}")))
    pool_names = [m["metadata"]["name"] for m in manifests]
    for name, node_class in settings.node_classes.items():
        manifest = nodeclass_manifest(name, node_class, cluster_name="cluster", role="role")
        for path, message, first in manifest_gaps(manifest, version):
            where = config_path(path, _dump(node_class), f"{NAMESPACE}nodeClasses.{name}")
            issues.append(ConfigIssue(display_stack, where, _message(version, first, f"EC2NodeClass {path}: {message}")))
    if settings.odigos.needs_node_overlay:
        for path, message, first in manifest_gaps(node_overlay(settings.odigos, sorted(pool_names)), version):
            issues.append(ConfigIssue(display_stack, f"{NAMESPACE}odigos.mountMethod",
                                      _message(version, first, f"NodeOverlay {path}: {message}")))
    values = controller_chart_values(platform, cluster_name="cluster", cluster_endpoint="https://endpoint",
                                     queue_name="queue", controller_role_arn="arn")
    defaults = helm_values.karpenter_defaults("karpenter", version)
    for key in helm_values.unknown_keys(values, defaults, helm_values.KARPENTER_FREE_FORM):
        since = helm_values.first_version_with("karpenter", key)
        if since is None or reference.order(since) <= reference.order(version):
            continue  # no release has it: not a version question
        where = config_path(key, _dump(settings.karpenter), f"{NAMESPACE}karpenter")
        if key == "settings.featureGates.nodeOverlay" and settings.odigos.needs_node_overlay:
            where = f"{NAMESPACE}odigos.mountMethod"
        issues.append(ConfigIssue(display_stack, where, _message(version, since, f"chart value {key}")))
    return issues
