"""`python -m policies.check build/<stack>`: the policy pack over an offline render, no CLI.

Reads build/<stack>/resources.json (and outputs.json for the environment), writes
build/<stack>/policy-report.json (a JSON list of {"policy", "resource", "level", "message"}),
prints the violations, and exits 3 when a mandatory policy is violated, 0 otherwise, 2 when the
input or the config cannot be read or the pack itself fails (nothing is written then).

    --environment ENV   judge as this environment (default: outputs.json "environment")
    --config FILE       policy config, same JSON shape as `pulumi preview --policy-pack-config`
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping

from kubefacts.errors import shown
from kubefacts.yamlread import Limits, UnsafeInput, file_kind, load_json_file

from .pack import ALL
from .engine import Finding, evaluate, resolve, validate_config
from .levels import MANDATORY
from .model import UNKNOWN, Resource, Stack
from kubefacts.errors import Refusal

EXIT_OK, EXIT_UNREADABLE, EXIT_MANDATORY = 0, 2, 3
REPORT = "policy-report.json"
# How `python -m offline.render --preview` writes a value not known until applied.
UNKNOWN_MARKER = "[unknown]"


class InputError(Refusal):
    """A build folder or policy config the check cannot read (exit 2)."""


LIMITS = Limits(max_bytes=64 * 2**20)


def _with_unknowns(value: Any) -> Any:
    """The render's "[unknown]" markers as the UNKNOWN every policy already handles."""
    if value == UNKNOWN_MARKER:
        return UNKNOWN
    if isinstance(value, Mapping):
        return {k: _with_unknowns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_unknowns(v) for v in value]
    return value


def resource_from_render(entry: Mapping[str, Any], where: str = "resources.json") -> Resource:
    """One resources.json entry (as offline.render writes it) as a policy Resource; every field
    is type-checked first, naming the entry and key that is wrong."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
        raise InputError(f"{where}: not a resource entry (expected an object with a string \"type\"): {str(entry)[:120]}")
    for key, kind in (("name", str), ("urn", str), ("parent", str), ("options", Mapping), ("inputs", Mapping)):
        if entry.get(key) is not None and not isinstance(entry[key], kind):
            expected = "an object" if kind is Mapping else "a string"
            raise InputError(f"{where}.{key}: expected {expected}, got {type(entry[key]).__name__}")
    options = entry.get("options") or {}
    inputs = entry.get("inputs")
    return Resource(
        type=entry["type"],
        name=str(entry.get("name", "")),
        urn=str(entry.get("urn") or f"{entry['type']}::{entry.get('name', '')}"),
        props=_with_unknowns(inputs) if isinstance(inputs, Mapping) else {},
        protect=bool(options.get("protect", False)),
        retain_on_delete=bool(options.get("retainOnDelete", False)),
        parent=entry.get("parent"),
    )


def _read_json(path: Path) -> Any:
    """A JSON file through the bounded loader (size, encoding, depth, duplicate keys, NaN)."""
    try:
        return load_json_file(path, str(path), LIMITS)
    except UnsafeInput as err:
        raise InputError(str(err)) from None


def load_stack(build_dir: Path, environment: str | None = None) -> Stack:
    resources_file = build_dir / "resources.json"
    if build_dir.exists() and not build_dir.is_dir():
        raise InputError(f"{shown(build_dir)}: is {file_kind(build_dir.stat().st_mode)}, not a build folder")
    if not resources_file.exists():
        raise InputError(f"{shown(resources_file)} not found; run `python -m offline.render <stack>` first")
    entries = _read_json(resources_file)
    if not isinstance(entries, list):
        raise InputError(f"{shown(resources_file)} must hold a JSON list of resources")
    if not entries:
        # Every render declares resources; an empty list is a broken build, not a clean one.
        raise InputError(f"{shown(resources_file)} holds no resources: not a render (run `python -m offline.render <stack>`)")
    if environment is None:
        outputs_file = build_dir / "outputs.json"
        outputs = _read_json(outputs_file) if outputs_file.exists() else {}
        environment = outputs.get("environment") if isinstance(outputs, Mapping) else None
        if not isinstance(environment, str):
            environment = None
    return Stack(environment, tuple(resource_from_render(e, f"{shown(resources_file)}: [{i}]") for i, e in enumerate(entries)))


def load_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    config = _read_json(path)
    problems = validate_config(config)
    if problems:
        raise InputError(f"config {shown(path)}:\n  " + "\n  ".join(problems))
    return config


def format_findings(findings: list[Finding], stack: Stack, config: Mapping[str, Any]) -> str:
    lines = [f"Policy pack over {len(stack.resources)} resources, environment "
             f"{stack.environment or '(unknown: strictest defaults)'}:"]
    order = {MANDATORY: 0}
    for finding in sorted(findings, key=lambda f: (order.get(f.level, 1), f.policy, f.label)):
        where = finding.label or finding.urn or "stack"
        lines.append(f"  [{finding.level}] {finding.policy}: {where}")
        lines.append(f"      {finding.message}")
    mandatory = sum(f.level == MANDATORY for f in findings)
    active = [p for p in ALL if resolve(p, stack.environment, config).level != "disabled"]
    lines.append(f"{len(active)} of {len(ALL)} policies ran; {mandatory} mandatory and "
                 f"{len(findings) - mandatory} advisory violation(s).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m policies.check", description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=Path, help="Folder written by `python -m offline.render` (build/<stack>).")
    parser.add_argument("--environment", help="Environment whose levels and ceilings apply (default: outputs.json).")
    parser.add_argument("--config", type=Path, help="Policy config JSON (same shape as --policy-pack-config).")
    parser.add_argument("--report", type=Path, help=f"Where to write the report (default: <build_dir>/{REPORT}).")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        stack = load_stack(args.build_dir, args.environment)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        findings = evaluate(stack, config)
    except Exception as err:  # noqa: BLE001 - a pack that cannot run must not read as "no findings"
        print(f"error: the policy pack failed: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    report = args.report or args.build_dir / REPORT
    try:
        report.write_text(json.dumps([f.to_json() for f in findings], indent=2, allow_nan=False) + "\n")
    except OSError as err:
        print(f"error: cannot write the report {shown(report)}: {err.strerror or err}", file=sys.stderr)
        return EXIT_UNREADABLE
    print(format_findings(findings, stack, config))
    print(f"Wrote {report}")
    return EXIT_MANDATORY if any(f.level == MANDATORY for f in findings) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
