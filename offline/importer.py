"""`python -m offline.importer --team TEAM --out OUTDIR [--dry-run] FILE_OR_DIR...`

Reads Karpenter NodePool (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1) YAML (files with
several documents, `kind: List`, folders of *.yaml/*.yml), converting older objects first
(`karpenter.sh/v1alpha5` Provisioners with their AWSNodeTemplates or inline provider,
`karpenter.sh/v1beta1` NodePools, `karpenter.k8s.aws/v1beta1` EC2NodeClasses: components/config/migrate),
writes `OUTDIR/teams/TEAM.yaml` (a team file holding the NodePools) and `OUTDIR/nodeclasses.yaml` (a
mapping to put under `karpenter-platform:nodeClasses` in a stack file, merged with the one already
there), and prints what it changed and what it could not carry over. It then renders the result as the
stack will and checks every field of the original specs comes back, and warns about every finding
the policy pack raises on it in each of the project's stacks. `--dry-run` prints the v1 objects
instead (the report goes to stderr) and writes nothing.

Exit codes: 0 everything carried over; 1 written, but something could not be carried over (listed);
2 invalid input or input the platform refuses, or files that cannot be written (file and key path
printed; nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence, TextIO

import yaml

from kubefacts.yamlread import UnsafeInput, load_yaml_files  # the one bounded loader (size, depth, aliases, duplicate keys)

from components.config.errors import ConfigIssue
from components.config.imports import Document, documents, import_documents
from components.config.loader import issue_from_unsafe
from components.config.migrate import migrate_documents
from components.roundtrip import roundtrip
from kubefacts.labels import check_dns_label

from .import_checks import PROJECT_DIR, name_clashes, policy_findings, read_stacks, strictest_limits

EXIT_OK, EXIT_LOSSES, EXIT_INVALID = 0, 1, 2


def _inputs(paths: Sequence[str]) -> tuple[list[Path], list[ConfigIssue]]:
    files, issues = [], []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                issues.append(ConfigIssue(raw, "", "folder holds no .yaml or .yml file"))
            files += found
        elif path.is_file():
            files.append(path)
        else:
            issues.append(ConfigIssue(raw, "", "no such file or folder"))
    return files, issues


def read_documents(paths: Sequence[str]) -> tuple[list[Document], list[ConfigIssue]]:
    """Every object of every input, or the issues (unreadable or malformed files)."""
    files, issues = _inputs(paths)
    docs: list[Document] = []
    for path in files:
        try:
            content = [doc.value for doc in load_yaml_files(path, str(path))]
        except UnsafeInput as err:
            issues.append(issue_from_unsafe(err, str(path)))
            continue
        docs += documents(str(path), content)
    return docs, issues


def _dump(value: object) -> str:
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


CLASSES_HEADER = "# Put this mapping under `karpenter-platform:nodeClasses` in the stack file.\n"


def merge_node_classes(existing: dict[str, Any], imported: dict[str, Any], force: bool) -> tuple[dict[str, Any], list[str]]:
    """`imported` added to an existing nodeclasses.yaml mapping; the names it would change (refused
    unless `force`: an earlier import's classes are never replaced silently)."""
    clashes = [name for name in imported if name in existing and existing[name] != imported[name]]
    if clashes and not force:
        return existing, clashes
    return {**existing, **imported}, clashes


def _existing_classes(path: Path) -> dict[str, Any] | ConfigIssue:
    """The node classes an earlier import wrote to `path`, or why they cannot be read."""
    if not path.exists():
        return {}
    if not path.is_file():
        return ConfigIssue(str(path), "", "exists and is not a file")
    try:
        content = [doc.value for doc in load_yaml_files(path, str(path))]
    except UnsafeInput as err:
        return issue_from_unsafe(err, str(path))
    value: Any = next((doc for doc in content if doc is not None), {})
    if not isinstance(value, dict):
        return ConfigIssue(str(path), "", "expected a mapping of node classes by name (as the importer writes)")
    return value


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write(team_doc: dict[str, Any], node_classes: dict[str, Any], team: str, out: Path, sources: Sequence[str]) -> list[Path]:
    header = f"# Imported by `python -m offline.importer` from {', '.join(sources)}.\n"
    team_file, classes_file = out / "teams" / f"{team}.yaml", out / "nodeclasses.yaml"
    _write_atomic(team_file, header + _dump(team_doc))
    _write_atomic(classes_file, header + CLASSES_HEADER + (_dump(node_classes) if node_classes else "{}\n"))
    return [team_file, classes_file]


def _out_problem(out: Path, team: str, force: bool) -> str | None:
    """Why nothing can be written into `out`, before anything is read."""
    for path in (out, out / "teams"):
        if path.exists() and not path.is_dir():
            return f"{path}: exists and is not a folder; --out names the folder to write teams/{team}.yaml and nodeclasses.yaml into"
    target = out / "teams" / f"{team}.yaml"
    if target.exists() and not force:
        return f"{target}: exists; choose another --team or --out, or pass --force to overwrite"
    return None


def _fail(issues: Sequence[ConfigIssue | str], err: TextIO) -> int:
    for issue in issues:
        print(f"error: {issue}", file=err)
    print(f"{len(issues)} error(s); nothing written", file=err)
    return EXIT_INVALID


def run(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.importer",
                                     description="Import Karpenter NodePools and EC2NodeClasses (v1, or older APIs "
                                                 "converted to v1) into a team file and a nodeClasses mapping.")
    parser.add_argument("--team", required=True, help="Team name: the NodePools render as <team>-<pool>.")
    parser.add_argument("--out", help="Folder to write teams/<team>.yaml and nodeclasses.yaml into (not needed with "
                                      "--dry-run).")
    parser.add_argument("--force", action="store_true",
                        help="Overwrite an existing teams/<team>.yaml and replace node classes of the same name in an "
                             "existing nodeclasses.yaml.")
    parser.add_argument("--dry-run", action="store_true",
                        help="Print the converted v1 NodePools and EC2NodeClasses (the report goes to stderr) and write "
                             "nothing.")
    parser.add_argument("--project", default=str(PROJECT_DIR),
                        help="Project whose stacks/ give the ceilings, the node class names in use and the policy check "
                             "(default: this repository).")
    parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    args = parser.parse_args(argv)
    try:
        check_dns_label(args.team)
    except ValueError as error:
        print(f"error: --team: {error}", file=err)
        return EXIT_INVALID
    if not args.out and not args.dry_run:  # `--out ""` names no folder either
        print("error: --out: required (the folder to write into), unless --dry-run", file=err)
        return EXIT_INVALID
    out_dir = Path(args.out) if args.out else None
    problem = _out_problem(out_dir, args.team, args.force) if out_dir and not args.dry_run else None
    if problem:
        print(f"error: {problem}", file=err)
        return EXIT_INVALID
    docs, issues = read_documents(args.paths)
    migration = migrate_documents(docs)
    issues += migration.log.errors
    project = Path(args.project)
    views, stack_warnings = read_stacks(project)
    result = import_documents(migration.documents, args.team, strictest_limits(views))
    issues += result.errors
    if not issues and result.team is not None and not result.team["nodePools"] and not result.node_classes:
        issues.append(ConfigIssue(", ".join(args.paths), "", "no NodePool or EC2NodeClass found"))
    classes = result.node_classes
    if not issues and out_dir and not args.dry_run:
        existing = _existing_classes(out_dir / "nodeclasses.yaml")
        if isinstance(existing, ConfigIssue):
            issues.append(existing)
        else:
            classes, clashes = merge_node_classes(existing, result.node_classes, args.force)
            if clashes and not args.force:
                issues += [ConfigIssue(str(out_dir / "nodeclasses.yaml"), name, "already holds a different EC2NodeClass of "
                           "this name (from an earlier import); rename the imported one, or pass --force to replace it")
                           for name in clashes]
            kept = sorted(set(existing) - set(result.node_classes))
            if kept:
                migration.log.notes.append(f"{out_dir / 'nodeclasses.yaml'}: merged; kept the node classes already there: "
                                           f"{', '.join(kept)}")
    if issues or result.team is None:  # the team is None only with errors
        return _fail(issues, err)
    rendered = roundtrip(migration.documents, result, args.team)
    losses = migration.log.losses + result.losses + [f"{line} (not reproduced by the render)" for line in rendered.losses]
    warnings = stack_warnings + name_clashes(views, result.node_classes) + \
        policy_findings(project, views, args.team, result.team, result.node_classes)
    report = err if args.dry_run else out
    if args.dry_run or out_dir is None:  # out_dir is None only with --dry-run
        objects = [d.body for d in migration.documents if isinstance(d.body, dict)
                   and d.body.get("kind") in ("NodePool", "EC2NodeClass")]
        out.write(yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True))
        done = "Dry run: nothing written."
    else:
        try:
            written = write(result.team, classes, args.team, out_dir, args.paths)
        except OSError as error:
            return _fail([f"{error.filename or out_dir}: cannot write: {error.strerror or error}"], err)
        done = f"Wrote {', '.join(str(p) for p in written)}"
    print(f"Imported {len(result.imported)} object(s): {', '.join(result.imported)}", file=report)
    print(done, file=report)
    for line in migration.log.changes + result.changes + rendered.additions:
        print(f"changed: {line}", file=report)
    for line in migration.log.notes + result.notes:
        print(f"note: {line}", file=report)
    for line in warnings:
        print(f"warning: {line}", file=report)
    for line in losses:
        print(f"not carried over: {line}", file=report)
    if losses:
        return EXIT_LOSSES
    print("Every field of the original specs is reproduced by the render (platform additions aside).", file=report)
    return EXIT_OK


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
