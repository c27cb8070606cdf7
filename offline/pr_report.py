"""`python -m offline.pr_report STACK --base REF`: what a change to the stack does, as a pull-request comment.

Renders STACK at git REF (in a temporary `git worktree`, with that revision's own code) and as the
working tree is now, then prints Markdown: resources added, changed and removed by type
(resources.json); the NodePools and EC2NodeClasses that will drift (`provisioner drift`'s core,
with node counts when --snapshot is given); the plan price of the workloads before and after
(`provisioner simulate` over each render's manifests plus the same workloads); new and fixed
policy findings (policy-report.json); with --trace, the cost, node hours and evictions of the workloads
over that trace before and after (`provisioner replay`).

Exit 0 (the report is printed); 1 when --fail-on is given and what it names happened (drift: any
NodePool or EC2NodeClass drifts; policy: a mandatory policy fails on the new render); 2 when an
input is wrong (unknown ref, a render that fails on invalid config, unreadable snapshot) or the
policy pack fails to run on either render (its cause is printed; never read as "no findings").
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from kubefacts.errors import Refusal, shown
from provisioner import (DriftReport, InputError, ReplayOptions, before_after, drift, load_trace, read_paths,
                         simulate)

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2
FAIL_ON = ("drift", "policy")
MANDATORY = "mandatory"
# offline.render: 0 clean, 4 written but an upstream check failed; 2 = invalid config, nothing written.
RENDERED = (0, 4)


class ReportError(Refusal):
    """Bad input: one line for the user, exit 2."""


# --------------------------------------------------------------------------------------------
# Pure parts: comparisons and the Markdown


@dataclass
class ResourceChanges:
    added: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    changed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    removed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def types(self) -> list[str]:
        return sorted(set(self.added) | set(self.changed) | set(self.removed))

    def total(self) -> int:
        return sum(len(v) for d in (self.added, self.changed, self.removed) for v in d.values())


def diff_resources(before: Sequence[Mapping], after: Sequence[Mapping]) -> ResourceChanges:
    """Resources by type and name: added, removed, or changed (inputs or options differ)."""
    def index(entries: Sequence[Mapping]) -> dict[tuple[Any, Any], Mapping]:
        return {(e.get("type"), e.get("name")): e for e in entries if isinstance(e, Mapping)}
    old, new = index(before), index(after)
    changes = ResourceChanges()
    for key in sorted(set(old) | set(new), key=lambda k: (str(k[0]), str(k[1]))):
        type_, name = key
        if key not in old:
            changes.added[type_].append(name)
        elif key not in new:
            changes.removed[type_].append(name)
        elif (old[key].get("inputs"), old[key].get("options")) != (new[key].get("inputs"), new[key].get("options")):
            changes.changed[type_].append(name)
    return changes


def _finding_key(finding: Mapping) -> tuple:
    return (finding.get("policy"), finding.get("resource"), finding.get("message"))


def diff_findings(before: Sequence[Mapping], after: Sequence[Mapping]) -> tuple[list[Mapping], list[Mapping]]:
    """(new, fixed) policy findings: keyed by policy, resource and message."""
    old = {_finding_key(f): f for f in before}
    new = {_finding_key(f): f for f in after}
    return ([new[k] for k in new if k not in old], [old[k] for k in old if k not in new])


@dataclass
class Plan:
    price: float | None
    nodeclaims: int = 0
    unschedulable: int = 0
    error: str | None = None


def plan_of(objects: Sequence[Any], origins: Sequence[str]) -> Plan:
    try:
        result = simulate(objects, origins=origins).to_dict()["summary"]
    except InputError as err:
        return Plan(None, error=str(err))
    return Plan(result["price_usd_hour"], result["nodeclaims"], result["unschedulable"])


def _short(resource: str | None) -> str:
    return (resource or "stack").rsplit("::", 1)[-1]


def _price(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}/h"


def render_markdown(stack: str, base: str, changes: ResourceChanges, report: DriftReport, plans: tuple[Plan, Plan],
                    new: list[Mapping], fixed: list[Mapping], after_findings: list[Mapping], workloads: str,
                    snapshot: bool, replayed: tuple | None = None) -> str:
    lines = [f"## Karpenter platform: stack `{stack}` compared with `{base}`", ""]
    drifting = [p for p in report.nodepools if p.drift]
    classes = [c for c in report.nodeclasses if c.drift]
    mandatory = [f for f in after_findings if f.get("level") == MANDATORY]
    price_before, price_after = plans[0].price, plans[1].price
    delta = (f"{price_after - price_before:+.4f}" if price_before is not None and price_after is not None else "n/a")
    lines += [f"**{changes.total()}** resource change(s) · **{len(drifting)}** NodePool(s) drift"
              + (f" ({sum(p.nodes or 0 for p in drifting)} node(s) replaced)" if snapshot else "")
              + f" · plan price {_price(price_before)} → {_price(price_after)} ({delta} $/h)"
              + f" · {len(new)} new, {len(fixed)} fixed policy finding(s)"
              + (f" · **{len(mandatory)} mandatory violation(s)**" if mandatory else ""), ""]

    lines += ["### Resources", ""]
    if changes.total() == 0:
        lines += ["No resource changes.", ""]
    else:
        lines += ["| type | added | changed | removed |", "|---|---:|---:|---:|"]
        for type_ in changes.types():
            lines.append(f"| `{type_}` | {len(changes.added.get(type_, []))} | {len(changes.changed.get(type_, []))} "
                         f"| {len(changes.removed.get(type_, []))} |")
        lines += ["", "<details><summary>names</summary>", ""]
        for label, group in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed)):
            for type_ in sorted(group):
                lines.append(f"- {label} `{type_}`: " + ", ".join(f"`{n}`" for n in group[type_]))
        lines += ["", "</details>", ""]

    lines += ["### Drift (Karpenter v1.14: nodes that will be replaced)", ""]
    if not drifting and not classes:
        lines += ["Nothing drifts: no NodePool or EC2NodeClass change replaces nodes.", ""]
    else:
        lines += ["| NodePool | nodes | causes |", "|---|---:|---|"]
        for pool in drifting:
            nodes = "?" if pool.nodes is None else str(pool.nodes)
            lines.append(f"| `{pool.name}` | {nodes} | " + ", ".join(
                f"{c.kind} `{c.path}`" if c.path else c.kind for c in pool.causes) + " |")
        if classes:
            lines += ["", "| EC2NodeClass | causes |", "|---|---|"]
            for nodeclass in classes:
                lines.append(f"| `{nodeclass.name}` | " + ", ".join(
                    f"{c.kind} `{c.path}`" if c.path else c.kind for c in nodeclass.causes) + " |")
        if not snapshot:
            lines.append("\nNode counts need a snapshot (`SNAPSHOT=nodes.yaml`: `kubectl get nodes,nodeclaims -o yaml`).")
        lines.append("")

    lines += [f"### Plan price (`{workloads}`)", "", "| | before | after |", "|---|---:|---:|"]
    lines.append(f"| price | {_price(price_before)} | {_price(price_after)} |")
    lines.append(f"| new NodeClaims | {plans[0].nodeclaims} | {plans[1].nodeclaims} |")
    lines.append(f"| unschedulable pods | {plans[0].unschedulable} | {plans[1].unschedulable} |")
    for when, plan in (("before", plans[0]), ("after", plans[1])):
        if plan.error:
            lines.append(f"\nCould not simulate {when}: {plan.error}")
    lines.append("")

    if replayed is not None:
        lines += replay_lines(*replayed)

    lines += ["### Policy findings", ""]
    if not new and not fixed:
        lines.append("No new or fixed findings.")
    for label, findings in (("New", new), ("Fixed", fixed)):
        for finding in findings:
            lines.append(f"- {label} [{finding.get('level')}] `{finding.get('policy')}` on `{_short(finding.get('resource'))}`: "
                         f"{finding.get('message')}")
    lines.append("")
    return "\n".join(lines)


def replay_lines(trace: str, until: float, before: Mapping, after: Mapping) -> list[str]:
    """"Over the trace": cost, node hours and evictions before and after (provisioner replay)."""
    lines = [f"### Over the trace (`{trace}`, {until / 3600:g} h replayed)", "", "| | before | after |", "|---|---:|---:|"]
    lines.append(f"| cost | ${before['cost_usd']:.2f} | ${after['cost_usd']:.2f} |")
    lines.append(f"| node hours | {before['node_hours']:.1f} | {after['node_hours']:.1f} |")
    lines.append(f"| nodes launched | {before['nodes_launched']} | {after['nodes_launched']} |")
    lines.append(f"| pods evicted | {before['pods_evicted']} | {after['pods_evicted']} |")
    for reason in sorted(set(before["evictions_by_reason"]) | set(after["evictions_by_reason"])):
        lines.append(f"| evicted: {reason} | {before['evictions_by_reason'].get(reason, 0)} "
                     f"| {after['evictions_by_reason'].get(reason, 0)} |")
    lines.append(f"| pending p95 | {before['pending_p95_s']:g} s | {after['pending_p95_s']:g} s |")
    return lines + [""]


def gate(fail_on: Sequence[str], report: DriftReport, after_findings: Sequence[Mapping]) -> bool:
    """True when the CI gate should fail."""
    drifts = any(p.drift for p in report.nodepools) or any(c.drift for c in report.nodeclasses)
    mandatory = any(f.get("level") == MANDATORY for f in after_findings)
    return ("drift" in fail_on and drifts) or ("policy" in fail_on and mandatory)


# --------------------------------------------------------------------------------------------
# Shell: git, renders, files


def _git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True)
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise ReportError(f"git {' '.join(args)}: {message}")
    return done.stdout


def render(source: Path, stack: str, out: Path, missing_ok: bool = False) -> None:
    """offline.render and policies.check of `source`'s own code into `out` (subprocesses, so the
    base revision runs with the code it had). A stack the base does not have renders as empty."""
    if not (source / "stacks" / f"Pulumi.{stack}.yaml").exists():
        if missing_ok:
            (out / "manifests").mkdir(parents=True)
            return
        raise ReportError(f"{shown(source)}: no stacks/Pulumi.{shown(stack)}.yaml")
    rendered = subprocess.run([sys.executable, "-m", "offline.render", stack, "--project-dir", str(source),
                               "--out", str(out)], cwd=source, capture_output=True, text=True)
    if rendered.returncode not in RENDERED:
        errors = [line for line in rendered.stderr.splitlines() if line.startswith("error:")] or \
            rendered.stderr.strip().splitlines()[-1:] or ["render failed"]
        raise ReportError(f"rendering {shown(stack)} in {shown(source)} failed: {errors[0].removeprefix('error: ')}")
    run_policies(source, out)


# policies.check: 0 no mandatory finding, 3 a mandatory one; either way the report is written.
POLICY_RAN = (0, 3)


def run_policies(source: Path, out: Path) -> None:
    """policies.check of `source`'s own pack over the render in `out`. A run that fails (an
    exception, an import error in the pack, no report written) is an error naming its cause: an
    empty findings list would otherwise read as "no findings" and pass FAIL_ON=policy."""
    report = out / "policy-report.json"
    report.unlink(missing_ok=True)  # a report left from an earlier run must not stand in for this one
    done = subprocess.run([sys.executable, "-m", "policies.check", str(out), "--report", str(report)],
                          cwd=source, capture_output=True, text=True)
    if done.returncode not in POLICY_RAN or not report.is_file():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error:")]
        cause = (errors or lines[-1:] or [f"exit {done.returncode}, no {report.name} written"])[0]
        raise ReportError(f"the policy pack of {shown(source)} failed on the {out.name} render: {cause.removeprefix('error: ')}")


def _json_list(path: Path) -> list:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError) as err:
        raise ReportError(f"{shown(path)}: not readable JSON: {err}") from None
    return data if isinstance(data, list) else []


def build_report(project: Path, stack: str, base: str, workloads: str, snapshot: Sequence[str] | None,
                 trace: str | None = None) -> tuple[str, DriftReport, list[Mapping]]:
    project = Path(_git(project, "rev-parse", "--show-toplevel").strip())
    try:
        commit = _git(project, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}").strip()
    except ReportError:
        raise ReportError(f"--base {base}: not a commit in {project}") from None
    workload_path = str((project / workloads) if not Path(workloads).is_absolute() else Path(workloads))
    try:  # read the inputs first: a wrong path fails before two renders
        loads, load_origins = read_paths([workload_path])
        snap = read_paths(snapshot) if snapshot else (None, None)
        replay_trace = load_trace(trace) if trace else None
    except InputError as err:
        raise ReportError(str(err)) from None
    with tempfile.TemporaryDirectory(prefix="pr-report-") as tmp:
        tmp_dir = Path(tmp)
        tree = tmp_dir / "base"
        _git(project, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:
                jobs = [pool.submit(render, tree, stack, tmp_dir / "before", True),
                        pool.submit(render, project, stack, tmp_dir / "after")]
                for job in jobs:
                    job.result()
        finally:
            subprocess.run(["git", "-C", str(project), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)
        try:
            before, before_origins = read_paths([str(tmp_dir / "before" / "manifests")])
            after, after_origins = read_paths([str(tmp_dir / "after" / "manifests")])
            report = drift(before, after, snap[0], before_origins=before_origins, after_origins=after_origins,
                           snapshot_origins=snap[1])
        except InputError as err:
            raise ReportError(str(err)) from None
        plans = (plan_of(before + loads, before_origins + load_origins),
                 plan_of(after + loads, after_origins + load_origins))
        changes = diff_resources(_json_list(tmp_dir / "before" / "resources.json"),
                                 _json_list(tmp_dir / "after" / "resources.json"))
        replayed = None
        if replay_trace is not None:
            until = max((e.at for e in replay_trace.events), default=0.0) or 3600.0
            try:
                replayed = (trace, until, *before_after((before + loads, before_origins + load_origins),
                                                        (after + loads, after_origins + load_origins),
                                                        replay_trace, ReplayOptions(until=until)))
            except InputError as err:
                raise ReportError(f"replaying {trace}: {err}") from None
        findings_before = _json_list(tmp_dir / "before" / "policy-report.json")
        findings_after = _json_list(tmp_dir / "after" / "policy-report.json")
    new, fixed = diff_findings(findings_before, findings_after)
    text = render_markdown(stack, base, changes, report, plans, new, fixed, findings_after, workloads,
                           snapshot is not None, replayed)
    return text, report, findings_after


def _fail_on(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in FAIL_ON]
    if unknown or not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(FAIL_ON)}")
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.pr_report", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="Stack name (stacks/Pulumi.<stack>.yaml).")
    parser.add_argument("--base", required=True, metavar="REF", help="Git ref to compare with (e.g. origin/main).")
    parser.add_argument("--snapshot", action="append", metavar="PATH",
                        help="Nodes/NodeClaims (`kubectl get nodes,nodeclaims -o yaml`) for node counts (repeatable).")
    parser.add_argument("--workloads", default="examples/workloads", metavar="PATH",
                        help="Workloads priced before and after (default examples/workloads).")
    parser.add_argument("--fail-on", type=_fail_on, default=[], metavar="drift,policy",
                        help="Exit 1 when something drifts and/or a mandatory policy fails.")
    parser.add_argument("--trace", metavar="PATH", help="Replay this trace (docs/replay.md) before and after: cost, "
                                                        "node hours and evictions over it.")
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="The repository (default: cwd).")
    args = parser.parse_args(argv)
    try:
        text, report, findings = build_report(args.project_dir, args.stack, args.base, args.workloads, args.snapshot,
                                              args.trace)
    except ReportError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(text)
    return EXIT_GATE if gate(args.fail_on, report, findings) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
