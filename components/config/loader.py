"""Reading a stack's configuration the way the Pulumi CLI does, and validating all of it at once.

Order, as the CLI applies it: `Pulumi.yaml` config defaults, then `stacks/Pulumi.<stack>.yaml`,
then each team file the stack names. Every problem is collected before anything is declared.
"""

from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from kubefacts.yamlread import UnsafeInput, load_yaml_file

from .errors import ConfigError, ConfigIssue, format_path, issues_from_validation
from kubefacts.labels import check_dns_label
from .odigos import odigos_cross_checks
from .partition import foreign_arns, partition_for_region
from .presets import deep_merge, expand_presets
from .sources import mark_sources, take_sources
from .stack import PROJECT, PlatformConfig, StackSettings
from .team_checks import unknown_environments, zone_issues
from .teams import Team, annotation_issues

NAMESPACE = f"{PROJECT}:"
SECRET_KEYS = {f"{NAMESPACE}odigosOnPremToken"}


def load_yaml(path: Path, display: str) -> Any:
    """A YAML file's content through the one bounded loader (kubefacts.yamlread: size, encoding,
    depth, aliases, duplicate and non-string keys); any refusal is a ConfigError naming the file,
    line, column and key path."""
    try:
        return load_yaml_file(path, display)
    except UnsafeInput as err:
        raise ConfigError([issue_from_unsafe(err, display)]) from None


def issue_from_unsafe(err: UnsafeInput, display: str) -> ConfigIssue:
    """A refusal of the bounded loader as a config issue: file, key path, then line and column."""
    where = f"line {err.line}, column {err.column}: " if err.line is not None else ""
    head, malformed, problem = err.message.partition("malformed YAML: ")
    message = f"{malformed}{where}{problem}" if malformed and not head else f"{where}{err.message}"
    return ConfigIssue(display, err.path, message)


@dataclass
class RawStack:
    """The namespaced config values of a stack and the file each came from."""

    stack: str
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    secret_keys: set[str] = field(default_factory=set)


def stack_file(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"


def read_stack_files(project_dir: Path, stack: str) -> RawStack:
    """Pulumi.yaml defaults overlaid with the stack file, as the CLI would pass them to the program."""
    raw = RawStack(stack)
    project = load_yaml(project_dir / "Pulumi.yaml", "Pulumi.yaml") or {}
    if not isinstance(project, dict) or not isinstance(project.get("config") or {}, dict):
        raise ConfigError([ConfigIssue("Pulumi.yaml", "config", "expected a mapping of config keys")])
    for key, spec in (project.get("config") or {}).items():
        if isinstance(spec, dict) and "default" in spec:
            raw.values[key] = spec["default"]
            raw.sources[key] = "Pulumi.yaml"
    display = stack_file(stack)
    document = load_yaml(project_dir / display, display)
    if document is None:
        document = {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise ConfigError([ConfigIssue(display, "config", "expected a mapping of config keys")])
    for key, value in (document.get("config") or {}).items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            raw.secret_keys.add(key)
        raw.values[key] = value
        raw.sources[key] = display
    return raw


def _decode(value: Any) -> Any:
    """The CLI hands object and array config to the program as JSON text."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def raw_from_runtime(project_dir: Path, stack: str) -> RawStack:
    """The config the Pulumi engine handed to this program, with each key's file where known."""
    from pulumi.runtime import config as runtime_config  # the engine's config map; no public listing API

    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = RawStack(stack)
    try:
        on_disk = read_stack_files(project_dir, stack)
    except ConfigError:
        on_disk = RawStack(stack)
    for key, value in values.items():
        if key.startswith(NAMESPACE):
            raw.values[key] = _decode(value)
            raw.sources[key] = on_disk.sources.get(key, stack_file(stack))
            if runtime_config.is_config_secret(key):
                raw.secret_keys.add(key)
    return raw


def _sections(document: dict[str, Any]) -> dict[str, Any]:
    """Each section of the stack validated on its own: one bad section (say `karpenter`) must not
    hide the values of the others (the cluster's zones, the environment) from the team checks,
    or every team would get false errors as well."""
    valid: dict[str, Any] = {}
    for name, info in StackSettings.model_fields.items():
        alias = info.alias or name
        if alias in document and info.annotation is not None:  # pydantic fields are all annotated
            try:
                valid[name] = TypeAdapter(info.annotation).validate_python(document[alias])
            except ValidationError:
                continue
    return valid


def _settings(raw: RawStack, issues: list[ConfigIssue], sections: dict[str, Any] | None = None) -> StackSettings | None:
    document: dict[str, Any] = {}
    for key, value in raw.values.items():
        if not key.startswith(NAMESPACE) or key in SECRET_KEYS:  # read outside StackSettings: secrets never enter the model
            continue
        document[key.removeprefix(NAMESPACE)] = value
    file_of = {key.removeprefix(NAMESPACE): source for key, source in raw.sources.items()}
    default_file = stack_file(raw.stack)
    try:
        return StackSettings.model_validate(document)
    except ValidationError as err:
        def remap(loc: tuple[Any, ...]) -> tuple[str, str]:
            head = str(loc[0]) if loc else ""
            return file_of.get(head, default_file), format_path(loc[1:], NAMESPACE + head)

        issues.extend(issues_from_validation(err, default_file, StackSettings, remap=remap))
        if sections is not None:
            sections.update(_sections(document))
        return None


def _get(node: Any, key: Any) -> Any:
    """`node[key]` when node is a mapping, else None: team files are read before validation."""
    return node.get(key) if isinstance(node, dict) and isinstance(key, str) else None


def _override_location(team_doc: dict, env: str, pool: Any, rest: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The override path that wrote the value at `rest` inside pool `pool`, if an override did."""
    override = _get(_get(_get(_get(team_doc, "environments"), env), "nodePools"), pool)
    node: Any = override
    for depth, part in enumerate(rest):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return None if depth == 0 else ("environments", env, "nodePools", pool, *rest[:depth])
    return ("environments", env, "nodePools", pool, *rest)


def _apply_override(doc: dict, env: str, display: str) -> list[ConfigIssue]:
    """Merge `environments.<env>` into the team's pools in place; report overrides of unknown pools."""
    environments = doc.get("environments")
    override = environments.get(env) if isinstance(environments, dict) else None
    pools = doc.get("nodePools")
    if not isinstance(override, dict) or not isinstance(pools, list):
        return []
    issues = []
    by_name = {p.get("name"): i for i, p in enumerate(pools) if isinstance(p, dict) and isinstance(p.get("name"), str)}
    patches = override.get("nodePools") or {}
    for pool_name, patch in patches.items() if isinstance(patches, dict) else ():
        if pool_name not in by_name:
            close = difflib.get_close_matches(str(pool_name), [str(n) for n in by_name], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            issues.append(ConfigIssue(display, f"environments.{env}.nodePools.{pool_name}",
                                      f"no NodePool named {pool_name!r} in this team{hint}"))
        elif isinstance(patch, dict):
            pools[by_name[pool_name]] = deep_merge(pools[by_name[pool_name]], patch)
    excluded = override.get("excludeNodePools") or []
    if not isinstance(excluded, list):  # validation of EnvironmentOverride reports it
        return issues
    excluded_names = {name for name in excluded if isinstance(name, str)}
    doc["nodePools"] = [p for p in pools if not (isinstance(p, dict) and isinstance(p.get("name"), str) and p["name"] in excluded_names)]
    return issues


def _shape_issues(doc: dict, display: str) -> list[ConfigIssue]:
    """What overrides and presets need before they can merge (they run before validation):
    requirements are lists of mappings with a string key. The models check everything else."""
    places: list[tuple[str, Any]] = []
    pools = doc.get("nodePools")
    if isinstance(pools, list):
        places += [(f"nodePools[{i}]", pool) for i, pool in enumerate(pools)]
    environments = doc.get("environments")
    for env, override in environments.items() if isinstance(environments, dict) else ():
        patches = _get(override, "nodePools")
        for pool_name, patch in patches.items() if isinstance(patches, dict) else ():
            places.append((f"environments.{env}.nodePools.{pool_name}", patch))
    issues = []
    for where, pool in places:
        requirements = _get(pool, "requirements")
        if requirements is None:
            continue
        if not isinstance(requirements, list):
            issues.append(ConfigIssue(display, f"{where}.requirements", "expected a list of requirements"))
            continue
        for index, requirement in enumerate(requirements):
            if not isinstance(requirement, dict):
                issues.append(ConfigIssue(display, f"{where}.requirements[{index}]",
                                          f"expected a mapping (key, operator, values), got {type(requirement).__name__}"))
            elif not isinstance(requirement.get("key"), (str, type(None))):
                issues.append(ConfigIssue(display, f"{where}.requirements[{index}].key",
                                          f"expected a label key (a string), got {type(requirement['key']).__name__}"))
    return issues


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _resolve_team(name: str, doc: Any, env: str, zones: list[str], display: str,
                  cluster_zones: list[str] | None = None) -> tuple[Team | None, list[ConfigIssue]]:
    """Overrides for `env`, then presets, then validation; errors point at the line the user wrote."""
    if not isinstance(doc, dict):
        return None, [ConfigIssue(display, "", "expected a mapping with name and nodePools")]
    shape = _shape_issues(doc, display)
    if shape:
        return None, shape
    doc = copy.deepcopy(doc)
    issues: list[ConfigIssue] = []
    if doc.setdefault("name", name) != name:
        issues.append(ConfigIssue(display, "name", f"{_short(doc['name'])} must equal the file name {name!r}"))
    mark_sources(doc, env)
    issues += _apply_override(doc, env, display)
    pools = doc.get("nodePools")
    if isinstance(pools, list):
        doc["nodePools"] = [expand_presets(p, zones) if isinstance(p, dict) else p for p in pools]
    file_index, requirement_sources = take_sources(doc)

    def remap(loc: tuple[Any, ...]) -> tuple[str, str] | None:
        """The path in the user's file: the pool's index before excludeNodePools, a requirement's
        index in the list the user wrote (not the preset-merged one), or the override that set it."""
        if len(loc) >= 2 and loc[0] == "nodePools" and isinstance(loc[1], int) and loc[1] < len(file_index):
            rest = tuple(loc[2:])
            if len(rest) >= 2 and rest[0] == "requirements" and isinstance(rest[1], int) \
                    and rest[1] < len(requirement_sources[loc[1]]):
                source = requirement_sources[loc[1]][rest[1]]
                where = (*source, *rest[2:]) if source else ("nodePools", file_index[loc[1]], "preset")
                return display, format_path(where)
            pool = doc["nodePools"][loc[1]]
            override = _override_location(doc, env, pool.get("name") if isinstance(pool, dict) else None, rest) if rest else None
            return display, format_path(override or ("nodePools", file_index[loc[1]], *rest))
        return None

    try:
        team = Team.model_validate(doc)
    except ValidationError as err:
        return None, issues + issues_from_validation(err, display, Team, remap=remap)
    issues += [ConfigIssue(display, path, message) for path, message in annotation_issues(team, env)]
    if cluster_zones:
        issues += zone_issues(team, cluster_zones, file_index, requirement_sources, display)
    return team, issues


def known_environments(project_dir: Path, stack: str, environment: str) -> list[str]:
    """Every environment a team file may name: each stack file's environment (its name unless it
    sets `environment`), and the one being rendered."""
    found = {environment, stack}
    for path in (project_dir / "stacks").glob("Pulumi.*.yaml"):
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        try:
            document = load_yaml(path, stack_file(name))
        except ConfigError:  # reported when that stack is rendered
            document = None
        value = _get(_get(document, "config"), f"{NAMESPACE}environment")
        found.add(value if isinstance(value, str) and value else name)
    return sorted(found)


def _other_environment_issues(name: str, doc: Any, env: str, environments: list[str], zones: list[str], display: str,
                              reported: list[ConfigIssue]) -> list[ConfigIssue]:
    """The team as the base (what a stack without an override sees) and every other environment
    sees it: a value only another stack renders is still checked whichever stack is rendered."""
    seen = set(reported)
    base: set[ConfigIssue] = set()
    issues: list[ConfigIssue] = []
    for other in ["", *environments]:
        if other == env:
            continue
        for issue in _resolve_team(name, doc, other, zones, display)[1]:
            if not other:
                base.add(issue)
            if issue in seen:
                continue
            seen.add(issue)
            if other and issue not in base and not issue.path.startswith(f"environments.{other}."):
                issue = ConfigIssue(issue.file, issue.path, f"{issue.message} (as environment {other} sees it)")
            issues.append(issue)
    return issues


def _is_dns_label(name: Any) -> bool:
    try:
        return isinstance(name, str) and bool(check_dns_label(name))
    except ValueError:
        return False


def build_config(project_dir: Path, raw: RawStack) -> PlatformConfig:
    """Validate a stack and all its teams against the config models; raise ConfigError listing
    every problem. components.platform adds the version gate (what the pinned release supports)."""
    issues: list[ConfigIssue] = []
    display_stack = stack_file(raw.stack)
    for key in SECRET_KEYS & raw.values.keys():
        if key not in raw.secret_keys:
            issues.append(ConfigIssue(raw.sources.get(key, display_stack), key,
                                      f"must be a secret: run `pulumi config set --secret {key.removeprefix(NAMESPACE)} ...`"))
    sections: dict[str, Any] = {}
    settings = _settings(raw, issues, sections)
    # Keep checking the teams when the stack file is wrong, so one run reports everything; the
    # sections that are valid still count, so one error does not cascade into false ones.
    if settings is not None:
        sections = {"environment": settings.environment, "cluster": settings.cluster, "teams": settings.teams}
    env = sections.get("environment") or raw.stack
    cluster = sections.get("cluster")
    # Unknown zones (the cluster section is wrong and reported): a stand-in keeps the multi-zone
    # preset from reporting an empty `In` on every pool.
    zones = cluster.availability_zones if cluster is not None else ["zone-unknown"]
    if cluster is not None:
        issues.extend(_partition_issues(raw, cluster.region))
    team_names = sections.get("teams") if "teams" in sections else raw.values.get(f"{NAMESPACE}teams") or []
    if not isinstance(team_names, list):
        team_names = []
    teams: list[Team] = []
    environments = known_environments(project_dir, raw.stack, env)
    for index, name in enumerate(team_names):
        if not _is_dns_label(name):
            continue  # reported by the stack's validation; never let such a name reach the filesystem
        display = f"stacks/teams/{name}.yaml"
        path = project_dir / display
        if not path.exists():
            available = sorted(p.stem for p in (project_dir / "stacks" / "teams").glob("*.yaml"))
            issues.append(ConfigIssue(raw.sources.get(f"{NAMESPACE}teams", display_stack), f"{NAMESPACE}teams[{index}]",
                                      f"team {name!r} is not defined: no {display} (teams: {', '.join(available) or 'none'})"))
            continue
        try:
            doc = load_yaml(path, display)
        except ConfigError as err:
            issues.extend(err.issues)
            continue
        team, team_issues = _resolve_team(name, doc, env, zones, display, cluster.availability_zones if cluster else None)
        issues.extend(team_issues)
        issues.extend(unknown_environments(doc, environments, display))
        issues.extend(_other_environment_issues(name, doc, env, environments, zones, display, team_issues))
        if team is not None:
            teams.append(team)
    if settings is not None:
        issues.extend(_cross_checks(settings, teams))
        issues.extend(odigos_cross_checks(settings, teams, stack_file=display_stack,
                                          token_configured=f"{NAMESPACE}odigosOnPremToken" in raw.values))
    if issues or settings is None:
        raise ConfigError(issues)
    platform = PlatformConfig(
        stack=raw.stack, environment=env, settings=settings, teams=teams,
        odigos_token_configured=f"{NAMESPACE}odigosOnPremToken" in raw.values,
    )
    return platform


def _partition_issues(raw: RawStack, region: str) -> list[ConfigIssue]:
    """ARNs of another partition than the cluster's region (an `arn:aws:` role in `cn-north-1`)."""
    values = {key: value for key, value in raw.values.items() if key.startswith(NAMESPACE) and key not in SECRET_KEYS}
    return [ConfigIssue(raw.sources.get(path.split(".", 1)[0].split("[", 1)[0], stack_file(raw.stack)), path,
                        f"{arn!r} is in partition {partition!r}, but the cluster's region {region} is in "
                        f"{partition_for_region(region)!r}: write arn:{partition_for_region(region)}:...")
            for path, arn, partition in foreign_arns(values, region)]


def _cross_checks(settings: StackSettings, teams: list[Team]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    seen: dict[str, str] = {}
    for team in teams:
        display = f"stacks/teams/{team.name}.yaml"
        local: set[str] = set()
        for index, pool in enumerate(team.node_pools):
            full = f"{team.name}-{pool.name}"
            if pool.name in local:
                issues.append(ConfigIssue(display, f"nodePools[{index}].name", f"NodePool {pool.name!r} is defined twice in this team"))
            elif full in seen:
                issues.append(ConfigIssue(display, f"nodePools[{index}].name",
                                          f"NodePool {full!r} is also rendered by {seen[full]}; NodePool names must be unique in the cluster"))
            local.add(pool.name)
            seen.setdefault(full, display)
            if len(full) > 63:
                issues.append(ConfigIssue(display, f"nodePools[{index}].name", f"rendered name {full!r} is longer than 63 characters"))
            if pool.node_class not in settings.node_classes:
                issues.append(ConfigIssue(display, f"nodePools[{index}].nodeClass",
                                          f"node class {pool.node_class!r} is not defined in the stack's nodeClasses "
                                          f"({', '.join(sorted(settings.node_classes))})"))
            if pool.replicas is not None and not settings.karpenter.feature_gates.static_capacity:
                issues.append(ConfigIssue(display, f"nodePools[{index}].replicas",
                                          "a static NodePool needs Karpenter's StaticCapacity feature gate, which is off in "
                                          "this stack: without it Karpenter never creates this pool's nodes; set "
                                          "karpenter-platform:karpenter.featureGates.staticCapacity: true"))
            if settings.odigos.enabled and settings.odigos.mount_method == "k8s-init-container":
                for t_index, taint in enumerate(pool.startup_taints):
                    if taint.key == "odigos.io/needs-init":
                        issues.append(ConfigIssue(display, f"nodePools[{index}].startupTaints[{t_index}]",
                                                  "Odigos mount method k8s-init-container never removes odigos.io/needs-init; "
                                                  "nodes would keep it and never take pods"))
    return issues


__all__ = ["ConfigError", "ConfigIssue", "RawStack", "build_config", "raw_from_runtime", "read_stack_files", "load_yaml"]
