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
from .presets import deep_merge, expand_presets
from .stack import PROJECT, PlatformConfig, StackSettings
from .teams import Team

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
        if alias in document:
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


def _resolve_team(name: str, doc: Any, env: str, zones: list[str], display: str) -> tuple[Team | None, list[ConfigIssue]]:
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
    issues += _apply_override(doc, env, display)
    pools = doc.get("nodePools")
    if isinstance(pools, list):
        doc["nodePools"] = [expand_presets(p, zones) if isinstance(p, dict) else p for p in pools]

    def remap(loc: tuple[Any, ...]) -> tuple[str, str] | None:
        if len(loc) >= 3 and loc[0] == "nodePools" and isinstance(loc[1], int):
            pool = doc["nodePools"][loc[1]]
            where = _override_location(doc, env, pool.get("name") if isinstance(pool, dict) else None, tuple(loc[2:]))
            if where:
                return display, format_path(where)
        return None

    try:
        return Team.model_validate(doc), issues
    except ValidationError as err:
        return None, issues + issues_from_validation(err, display, Team, remap=remap)


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
    team_names = sections.get("teams") if "teams" in sections else raw.values.get(f"{NAMESPACE}teams") or []
    if not isinstance(team_names, list):
        team_names = []
    teams: list[Team] = []
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
        team, team_issues = _resolve_team(name, doc, env, zones, display)
        issues.extend(team_issues)
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
            if settings.odigos.enabled and settings.odigos.mount_method == "k8s-init-container":
                for t_index, taint in enumerate(pool.startup_taints):
                    if taint.key == "odigos.io/needs-init":
                        issues.append(ConfigIssue(display, f"nodePools[{index}].startupTaints[{t_index}]",
                                                  "Odigos mount method k8s-init-container never removes odigos.io/needs-init; "
                                                  "nodes would keep it and never take pods"))
    return issues


__all__ = ["ConfigError", "ConfigIssue", "RawStack", "build_config", "raw_from_runtime", "read_stack_files", "load_yaml"]
