"""`python -m components.config.importer --team TEAM --out OUTDIR FILE_OR_DIR...`

Reads Karpenter NodePool (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1) YAML (files with
several documents, `kind: List`, folders of *.yaml/*.yml), writes `OUTDIR/teams/TEAM.yaml` (a team
file holding the NodePools) and `OUTDIR/nodeclasses.yaml` (a mapping to put under
`karpenter-platform:nodeClasses` in a stack file), and prints what it changed and what it could not
carry over. It then renders the result as the stack will and checks every field of the original
specs comes back.

Exit codes: 0 everything carried over; 1 written, but something could not be carried over (listed);
2 invalid input or input the platform refuses (file and key path printed; nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import yaml

from kubefacts.yamlread import UnsafeInput, load_yaml_files  # the one bounded loader (size, depth, aliases, duplicate keys)

from .errors import ConfigIssue
from .imports import Document, ImportResult, documents, import_documents
from components.roundtrip import roundtrip
from kubefacts.labels import check_dns_label
from .loader import issue_from_unsafe

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


def write(result: ImportResult, team: str, out: Path, sources: Sequence[str]) -> list[Path]:
    header = f"# Imported by `python -m components.config.importer` from {', '.join(sources)}.\n"
    team_file, classes_file = out / "teams" / f"{team}.yaml", out / "nodeclasses.yaml"
    team_file.parent.mkdir(parents=True, exist_ok=True)
    team_file.write_text(header + _dump(result.team))
    classes_file.write_text(header + "# Put this mapping under `karpenter-platform:nodeClasses` in the stack file.\n"
                            + (_dump(result.node_classes) if result.node_classes else "{}\n"))
    return [team_file, classes_file]


def run(argv: Sequence[str] | None = None, out=sys.stdout, err=sys.stderr) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.config.importer",
                                     description="Import Karpenter NodePools and EC2NodeClasses into a team file "
                                                 "and a nodeClasses mapping.")
    parser.add_argument("--team", required=True, help="team name: the NodePools render as <team>-<pool>")
    parser.add_argument("--out", required=True, help="folder to write teams/<team>.yaml and nodeclasses.yaml into")
    parser.add_argument("--force", action="store_true", help="overwrite an existing teams/<team>.yaml")
    parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    args = parser.parse_args(argv)
    try:
        check_dns_label(args.team)
    except ValueError as error:
        print(f"error: --team: {error}", file=err)
        return EXIT_INVALID
    target = Path(args.out) / "teams" / f"{args.team}.yaml"
    if target.exists() and not args.force:
        print(f"error: {target}: exists; choose another --team or --out, or pass --force to overwrite", file=err)
        return EXIT_INVALID
    docs, issues = read_documents(args.paths)
    result = import_documents(docs, args.team)
    issues += result.errors
    if not issues and not result.team["nodePools"] and not result.node_classes:
        issues.append(ConfigIssue(", ".join(args.paths), "", "no NodePool or EC2NodeClass found"))
    if issues:
        for issue in issues:
            print(f"error: {issue}", file=err)
        print(f"{len(issues)} error(s); nothing written", file=err)
        return EXIT_INVALID
    rendered = roundtrip(docs, result, args.team)
    losses = result.losses + [f"{line} (not reproduced by the render)" for line in rendered.losses]
    written = write(result, args.team, Path(args.out), args.paths)
    print(f"Imported {len(result.imported)} object(s): {', '.join(result.imported)}", file=out)
    print(f"Wrote {', '.join(str(p) for p in written)}", file=out)
    for line in result.changes + rendered.additions:
        print(f"changed: {line}", file=out)
    for line in result.notes:
        print(f"note: {line}", file=out)
    for line in losses:
        print(f"not carried over: {line}", file=out)
    if losses:
        return EXIT_LOSSES
    print("Every field of the original specs is reproduced by the render (platform additions aside).", file=out)
    return EXIT_OK


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
