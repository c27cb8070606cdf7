"""`python -m offline.upgrade STACK --to VERSION [-o json|table]`: what changes between the Karpenter
release a stack pins and VERSION, and the steps to get there.

Figures come from the project's per-release data (components/reference/, generated from the
upstream files by `make reference`): controller IAM actions, karpenter chart value keys and
defaults, CRDs, served schema fields and enum values; `config.invalid` is the stack's config the
target refuses (the version gate, components/versions.py). The steps follow the upstream
upgrade guide (website/content/en/docs/upgrading/upgrade-guide.md in aws/karpenter-provider-aws):
IAM before the controller, CRDs (the karpenter-crd chart) before the controller, the live
cluster's CRD storedVersions checked first. A plan to an older release lists what it removes
(CRDs, fields, enum values) and the steps in the reverse order. Exit 0; 2 with a one-line error for an unknown
version or an invalid stack.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

from components import iam, reference
from components.platform import load_platform
from components.versions import version_issues

from . import versioncli

# The chart file at each tag still names an earlier release's image (the release commit bumps
# only these two lines; see ../shared/reference/karpenter-versions/README.md): the chart version
# decides the image, so these defaults say nothing about an upgrade.
RELEASE_PINNED_KEYS = frozenset({"controller.image.tag", "controller.image.digest"})

# What the upstream upgrade guide says for a minor that the files cannot show (behaviour, not
# schema). Source: website/content/en/docs/upgrading/upgrade-guide.md, "Upgrading to 1.x.0+".
GUIDE_NOTES = {
    (1, 12): "1.12 adds drift on the CA bundle: the new hashing marks existing nodes as drifted and Karpenter "
             "replaces them (set disruption budgets or a maintenance window before the controller upgrade)",
    (1, 14): "1.14 ships the new CRD autoscaling.x-k8s.io_capacitybuffers: the karpenter-crd chart must be "
             "upgraded alongside the controller so it exists",
}


def _leaves(values: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted paths of a chart's defaults: a non-empty map is a branch, anything else a leaf."""
    if isinstance(values, dict) and values:
        for key, sub in values.items():
            yield from _leaves(sub, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, values


def schema_fields(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every field path under a served schema (`[]` for list items, `*` for map values)."""
    found: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        found.add(path)
        found |= schema_fields(sub, path)
    if isinstance(schema.get("items"), dict):
        found |= schema_fields(schema["items"], f"{prefix}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found |= schema_fields(schema["additionalProperties"], f"{prefix}.*")
    return found


def crd_fields(crd: dict[str, Any]) -> set[str]:
    fields: set[str] = set()
    for served in crd["versions"]:
        fields |= schema_fields(served["schema"])
    return fields


def _topmost(paths: set[str]) -> list[str]:
    """Only the outermost of nested paths: a new object is one entry, not one per sub-field."""
    def parent_in(path: str) -> bool:
        cut = path
        while True:
            cut = cut[: max(cut.rfind("."), cut.rfind("[]"))] if ("." in cut or "[]" in cut) else ""
            if not cut:
                return False
            if cut in paths:
                return True
    return sorted(p for p in paths if not parent_in(p))


def field_changes(old: reference.Release, new: reference.Release) -> tuple[list[str], list[str]]:
    added, removed = [], []
    for stem in sorted(set(old.crds) & set(new.crds)):
        before, after = crd_fields(old.crds[stem]), crd_fields(new.crds[stem])
        added += [f"{stem}:{p}" for p in _topmost(after - before)]
        removed += [f"{stem}:{p}" for p in _topmost(before - after)]
    return added, removed


def enums_added(old: reference.Release, new: reference.Release) -> list[dict[str, Any]]:
    """New values of enums the old release already had (a new field's enum comes with the field)."""
    found = []
    for path, values in new.enums.items():
        if path in old.enums:
            extra = [v for v in values if v not in old.enums[path]]
            if extra:
                found.append({"path": path, "values": extra})
    return found


def enums_removed(old: reference.Release, new: reference.Release) -> list[dict[str, Any]]:
    """Values of enums both releases have that the new one no longer accepts (a downgrade from 1.14
    loses `Balanced`); a field removed with its enum is listed under fieldsRemoved."""
    return enums_added(new, old)


def chart_changes(old: reference.Release, new: reference.Release) -> dict[str, Any]:
    before = dict(_leaves(old.chart_defaults("karpenter")))
    after = dict(_leaves(new.chart_defaults("karpenter")))
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changedDefaults": [{"key": key, "from": before[key], "to": after[key]} for key in sorted(set(before) & set(after))
                            if before[key] != after[key] and key not in RELEASE_PINNED_KEYS],
    }


def _statement_changes(old: reference.Release, new: reference.Release) -> list[str]:
    """`<policy>/<Sid>` of every controller statement that differs (added, removed or changed)."""
    def by_sid(release: reference.Release) -> dict[str, Any]:
        return {f"{p['key']}/{s.get('Sid', i)}": s for p in release.controller_policies for i, s in enumerate(p["statements"])}
    before, after = by_sid(old), by_sid(new)
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def downgrade_steps(stack: str, old: reference.Release, new: reference.Release, plan: dict[str, Any]) -> list[str]:
    """The upgrade guide's order reversed: first stop using what the older release does not serve
    (its CRDs would refuse those objects), then the controller, then the CRDs and IAM it no longer needs."""
    frm, to, crds, chart = old.version, new.version, plan["crds"], plan["chart"]
    removed = []
    if crds["removed"]:
        removed.append(f"CRDs {', '.join(crds['removed'])} (the karpenter-crd release deletes them and every object of theirs)")
    if crds["enumsRemoved"]:
        removed.append("enum values " + "; ".join(f"{', '.join(map(str, e['values']))} at {e['path']}" for e in crds["enumsRemoved"]))
    if crds["fieldsRemoved"]:
        removed.append(f"{len(crds['fieldsRemoved'])} field(s) ({', '.join(crds['fieldsRemoved'])})")
    out = [f"This is a downgrade ({frm} -> {to}). Karpenter {to} removes: {'; '.join(removed) or 'no CRD, field or enum value'}."]
    if plan["config"]["invalid"]:
        out.append(f"Fix the {len(plan['config']['invalid'])} config entr(y/ies) Karpenter {to} refuses (config.invalid) "
                   "before anything else.")
    out.append(f"Check the live cluster (read-only): python -m offline.preflight {stack} --to {to}. Change or delete every "
               f"object that uses a removed field or enum value and every object of a removed CRD first: {to}'s CRDs "
               "refuse them and its controller does not know them.")
    out.append(f"Set karpenter-platform:karpenter: {{version: \"{to}\"}} in stacks/Pulumi.{stack}.yaml and run "
               f"make render STACK={stack} (the offline render checks every object against the {to} CRDs).")
    chart_line = f"Controller: the karpenter chart moves back to {to}"
    if chart["removed"]:
        chart_line += f"; values it no longer reads: {', '.join(chart['removed'])} (drop them from the stack)"
    out.append(chart_line + ".")
    out.append(f"CRDs: the karpenter-crd release moves back to {to} (no object may still use what it removes).")
    if plan["iam"]["removed"] or plan["iam"]["added"]:
        out.append(f"IAM: the controller policies lose {', '.join(plan['iam']['removed']) or 'nothing'}"
                   + (f" and gain {', '.join(plan['iam']['added'])}" if plan["iam"]["added"] else "")
                   + f"; Karpenter {to} does not call the removed actions.")
    else:
        out.append("IAM: the controller policies are unchanged.")
    out.append(f"make preview STACK={stack}, then make up STACK={stack}; then check that the controller pods are Ready "
               "and a test pod gets a node.")
    return out


def steps(stack: str, old: reference.Release, new: reference.Release, plan: dict[str, Any]) -> list[str]:
    """The ordered procedure (upstream upgrade guide: IAM and CRDs before the controller)."""
    frm, to = old.version, new.version
    out: list[str] = []
    if frm == to:
        return [f"Nothing to upgrade: stack {stack} already pins Karpenter {to}."]
    if reference.order(to) < reference.order(frm):
        return downgrade_steps(stack, old, new, plan)
    if plan["config"]["invalid"]:
        out.append(f"Fix the {len(plan['config']['invalid'])} config entr(y/ies) Karpenter {to} refuses (config.invalid) "
                   f"before anything else.")
    out.append(f"Check the live cluster (read-only): python -m offline.preflight {stack} --to {to}. Every Karpenter "
               f"CRD's status.storedVersions must name only versions {to} serves, the installed chart must be {frm}, "
               "and no object may use a field the target drops.")
    out.append(f"Set karpenter-platform:karpenter: {{version: \"{to}\"}} in stacks/Pulumi.{stack}.yaml and run "
               f"make render STACK={stack} (the offline render checks every object against the {to} CRDs).")
    iam_changes = plan["iam"]
    statements = _statement_changes(old, new)
    if iam_changes["added"] or iam_changes["removed"] or statements:
        parts = []
        if iam_changes["added"]:
            parts.append("adds " + ", ".join(iam_changes["added"]))
        if iam_changes["removed"]:
            parts.append("removes " + ", ".join(iam_changes["removed"]))
        parts.append("statements changed: " + ", ".join(statements))
        out.append(f"IAM before the controller: the controller policies change ({'; '.join(parts)}). The stack updates "
                   "them first (the karpenter release depends on the AWS side); a role managed elsewhere must be "
                   "updated by hand before the new controller starts.")
    else:
        out.append("IAM: the controller policies are unchanged.")
    crd_line = f"CRDs before the controller: the karpenter-crd release moves to {to} first"
    if plan["crds"]["new"]:
        crd_line += f" and creates {', '.join(plan['crds']['new'])}"
    if plan["crds"]["fieldsAdded"] or plan["crds"]["enumsAdded"]:
        crd_line += (f" ({len(plan['crds']['fieldsAdded'])} new field(s), "
                     f"{sum(len(e['values']) for e in plan['crds']['enumsAdded'])} new enum value(s))")
    out.append(crd_line + "; the controller release depends on it.")
    chart = plan["chart"]
    chart_line = f"Controller: the karpenter chart moves to {to}"
    if chart["added"]:
        chart_line += f"; new values: {', '.join(chart['added'])} (off or defaulted unless the stack sets them)"
    if chart["removed"]:
        chart_line += f"; values removed: {', '.join(chart['removed'])}"
    out.append(chart_line + ".")
    crossed = sorted({(int(v.split('.')[0]), int(v.split('.')[1])) for v in reference.supported()
                      if min(reference.order(frm), reference.order(to)) < reference.order(v) <= max(reference.order(frm), reference.order(to))})
    for minor in crossed:
        if minor in GUIDE_NOTES:
            out.append("Upgrade guide: " + GUIDE_NOTES[minor] + ".")
    out.append(f"make preview STACK={stack}, then make up STACK={stack}: one pulumi up applies IAM, then the CRD "
               "chart, then the controller, in that order.")
    out.append("After: the controller pods are Ready, kubectl get crd nodepools.karpenter.sh -o "
               "jsonpath='{.status.storedVersions}' lists only served versions, and a test pod gets a node.")
    return out


def plan(project_dir: Path, stack: str, to: str) -> dict[str, Any]:
    """The upgrade plan, exactly the issue's JSON shape. Raises UnsupportedVersion, ConfigError."""
    reference.check(to)
    platform = load_platform(project_dir, stack)
    frm = platform.settings.karpenter.version
    old, new = reference.release(frm), reference.release(to)
    before, after = iam.controller_actions(frm), iam.controller_actions(to)
    added_fields, removed_fields = field_changes(old, new)
    result: dict[str, Any] = {
        "from": frm,
        "to": to,
        "iam": {"added": sorted(after - before), "removed": sorted(before - after)},
        "chart": chart_changes(old, new),
        "crds": {"new": sorted(set(new.crds) - set(old.crds)), "removed": sorted(set(old.crds) - set(new.crds)),
                 "fieldsAdded": added_fields, "fieldsRemoved": removed_fields, "enumsAdded": enums_added(old, new),
                 "enumsRemoved": enums_removed(old, new)},
        "config": {"invalid": [{"file": i.file, "path": i.path, "message": i.message}
                               for i in version_issues(platform, to)]},
    }
    result["steps"] = steps(stack, old, new, result)
    return result


def table(result: dict[str, Any]) -> str:
    lines = [f"Karpenter {result['from']} -> {result['to']}", ""]

    def section(title: str, entries: list[str]) -> None:
        lines.append(f"{title}: {'none' if not entries else ''}".rstrip())
        lines.extend(f"  {e}" for e in entries)

    section("IAM actions added", result["iam"]["added"])
    section("IAM actions removed", result["iam"]["removed"])
    section("Chart values added", result["chart"]["added"])
    section("Chart values removed", result["chart"]["removed"])
    section("Chart defaults changed", [f"{c['key']}: {c['from']!r} -> {c['to']!r}" for c in result["chart"]["changedDefaults"]])
    section("New CRDs", result["crds"]["new"])
    section("CRDs removed", result["crds"]["removed"])
    section("CRD fields added", result["crds"]["fieldsAdded"])
    section("CRD fields removed", result["crds"]["fieldsRemoved"])
    section("Enum values added", [f"{e['path']}: {', '.join(e['values'])}" for e in result["crds"]["enumsAdded"]])
    section("Enum values removed", [f"{e['path']}: {', '.join(e['values'])}" for e in result["crds"]["enumsRemoved"]])
    section("Config the target refuses", [f"{i['file']}: {i['path']}: {i['message']}" for i in result["config"]["invalid"]])
    lines += ["", "Steps:"]
    lines += [f"  {n}. {s}" for n, s in enumerate(result["steps"], 1)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = versioncli.parser("python -m offline.upgrade", " ".join(__doc__.split("\n\n")[0].split()))
    args = parser.parse_args(argv)
    try:
        result = plan(args.project_dir.resolve(), args.stack, args.to)
    except versioncli.INPUT_ERRORS as err:
        return versioncli.refuse(err, args.stack)
    print(json.dumps(result, indent=2) if args.output == "json" else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
