"""Helpers around a cosmic-ray session (`make mutation` runs them; cosmic-ray mutates the pydantic
validators, which mutmut 3 skips as decorated functions).

    python -m tools.cosmic_ray_session run [--sample N] MODULE...  # all of it, per module (make mutation)
    python -m tools.cosmic_ray_session skip-annotations SESSION   # before `cosmic-ray exec`
    python -m tools.cosmic_ray_session sample SESSION N [SEED]    # run only N pending mutants, drawn at random
    python -m tools.cosmic_ray_session report SESSION...          # kill rate per module
    python -m tools.cosmic_ray_session recheck SESSION            # re-run the survivors against today's tests

`skip-annotations` marks as skipped the mutants inside a function's parameter or return annotation
(`str | None` -> `str + None`): the modules use `from __future__ import annotations`, so those are
never evaluated and every such mutant is equivalent. Class-level field annotations stay (pydantic
evaluates them). The report's kill rate is killed / (killed + survived) over the mutants run.
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ANNOTATION_SKIP = "function annotation: never evaluated (from __future__ import annotations)"


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            notes = [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                     if a is not None and a.annotation is not None]
            notes += [node.returns] if node.returns is not None else []
            # cosmic-ray positions are (line, column) with 1-based lines, like ast's.
            spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in notes]
    return spans


def skip_annotations(session: str, cwd: str = ".") -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    with use_db(session, WorkDB.Mode.open) as db:
        spans_by_path: dict[str, list] = {}
        for item in list(db.pending_work_items):
            for mutation in item.mutations:
                path = str(mutation.module_path)
                spans = spans_by_path.setdefault(path, _annotation_spans((Path(cwd) / path).read_text()))
                start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
                if any(lo <= start and end <= hi for lo, hi in spans):
                    db.set_result(item.job_id, WorkResult(output=ANNOTATION_SKIP, worker_outcome=WorkerOutcome.SKIPPED))
                    skipped += 1
                    break
    print(f"{session}: {skipped} mutants inside function annotations skipped (equivalent)")
    return 0


def sample(session: str, size: int, seed: int = 12) -> int:
    """Skip all but `size` pending mutants, drawn at random: an unbiased kill-rate estimate when the
    whole module would take hours (cosmic-ray re-runs the test command, imports included, per mutant)."""
    import random

    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(session, WorkDB.Mode.open) as db:
        pending = sorted(item.job_id for item in db.pending_work_items)
        keep = set(random.Random(seed).sample(pending, min(size, len(pending))))
        for job_id in pending:
            if job_id not in keep:
                db.set_result(job_id, WorkResult(output=f"not in the random sample of {size} (seed {seed})",
                                                 worker_outcome=WorkerOutcome.SKIPPED))
    print(f"{session}: {len(keep)} of {len(pending)} pending mutants kept (seed {seed})")
    return 0


def report(sessions: list[str], cwd: str = ".") -> int:
    from cosmic_ray.work_db import WorkDB, use_db

    print(f"{'module':<40} {'mutants':>7} {'killed':>6} {'survived':>8} {'skipped':>7} {'pending':>7} {'kill rate':>9}")
    for session in sessions:
        with use_db(session, WorkDB.Mode.open) as db:
            counts: dict[str, Counter] = {}
            spans_by_path: dict[str, list] = {}
            for item, result in db.completed_work_items:
                mutation = item.mutations[0]
                path = str(mutation.module_path)
                outcome = result.worker_outcome.value if result.worker_outcome.value != "normal" else result.test_outcome.value
                spans = spans_by_path.setdefault(path, _annotation_spans((Path(cwd) / path).read_text()))
                if outcome == "survived" and any(lo <= tuple(mutation.start_pos) and tuple(mutation.end_pos) <= hi
                                                 for lo, hi in spans):
                    outcome = "skipped"  # run before skip-annotations marked it: equivalent
                counts.setdefault(path, Counter())[outcome] += 1
            for item in db.pending_work_items:
                counts.setdefault(str(item.mutations[0].module_path), Counter())["pending"] += 1
        for path, c in sorted(counts.items()):
            killed = c["killed"] + c["timeout"] + c["incompetent"]
            run = killed + c["survived"]
            rate = f"{killed / run:.1%}" if run else "-"
            total = sum(c.values())
            print(f"{path:<40} {total:>7} {killed:>6} {c['survived']:>8} {c['skipped']:>7} {c['pending']:>7} {rate:>9}")
    return 0


# Tests that exercise the config models without a Pulumi mock run (tools.mutation_fast drops those);
# the direct model tests first, so `-x` stops a killed mutant within a second or two of the imports.
TESTS = ["tests/components/config/test_model_rules.py", "tests/components/config/test_known_values_upstream.py",
         "tests/components/test_builder_manifests.py", "tests/components/config/test_validation.py",
         "tests/components/config/test_coverage_rules.py", "tests/components/config/test_trailing_newline.py",
         "tests/components/test_nodepools.py", "tests/components/test_nodeclasses.py"]


def run(modules: list[str], sample_size: int = 0) -> int:
    """cosmic-ray init + exec for each module in a scratch copy of the tracked files (cosmic-ray
    mutates the file on disk), sessions kept in mutants/cosmic-ray/, then the report."""
    import subprocess
    import tempfile

    root = Path.cwd()
    sessions_dir = root / "mutants" / "cosmic-ray"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    python = str((root / ".venv" / "bin" / "python").absolute())
    cosmic_ray = str(Path(sys.executable).with_name("cosmic-ray"))
    sessions = []
    with tempfile.TemporaryDirectory(prefix="cosmic-ray-") as scratch:
        _copy_tracked(root, Path(scratch))
        for module in modules:
            session = sessions_dir / (Path(module).stem + ".sqlite")
            config = sessions_dir / (Path(module).stem + ".toml")
            config.write_text(
                f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = 300.0\nexcluded-modules = []\n'
                f'test-command = "{python} -m pytest -x -q -p no:cacheprovider -p tools.mutation_fast {" ".join(TESTS)}"\n'
                '[cosmic-ray.distributor]\nname = "local"\n')
            session.unlink(missing_ok=True)
            subprocess.run([cosmic_ray, "init", str(config), str(session)], cwd=scratch, check=True)
            skip_annotations(str(session), cwd=scratch)
            if sample_size:
                sample(str(session), sample_size)
            subprocess.run([cosmic_ray, "exec", str(config), str(session)], cwd=scratch, check=True)
            sessions.append(str(session))
        return report(sessions, cwd=scratch)


def recheck(session: str) -> int:
    """Each survivor of `session` applied again (`cosmic-ray apply`) in a scratch copy and judged by the
    session's test command as the tests stand now: which survivors the tests added since kill."""
    import shlex
    import subprocess
    import tempfile

    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(session, WorkDB.Mode.open) as db:
        survivors = [item for item, result in db.completed_work_items
                     if result.worker_outcome.value == "normal" and result.test_outcome.value == "survived"]
    config = Path(session).with_suffix(".toml").read_text()
    command = shlex.split(config.split('test-command = "', 1)[1].split('"', 1)[0])
    cosmic_ray = str(Path(sys.executable).with_name("cosmic-ray"))
    still = 0
    with tempfile.TemporaryDirectory(prefix="cosmic-ray-recheck-") as scratch:
        _copy_tracked(Path.cwd(), Path(scratch))
        for item in survivors:
            m = item.mutations[0]
            path = Path(scratch) / m.module_path
            original = path.read_text()
            spans = _annotation_spans(original)
            if any(lo <= tuple(m.start_pos) and tuple(m.end_pos) <= hi for lo, hi in spans):
                continue  # equivalent: never evaluated
            try:
                subprocess.run([cosmic_ray, "apply", str(m.module_path), m.operator_name, str(m.occurrence)],
                               cwd=scratch, check=True, capture_output=True)
                failed = subprocess.run(command, cwd=scratch, capture_output=True).returncode != 0
            finally:
                path.write_text(original)
            still += not failed
            line = original.splitlines()[m.start_pos[0] - 1].strip()
            print(f"{'killed now' if failed else 'SURVIVES  '} {m.operator_name:42} {m.module_path}:{m.start_pos[0]} "
                  f"{m.definition_name}: {line[:80]}")
    print(f"{session}: {len(survivors)} survivors, {still} survive today's tests (annotation-only ones excluded)")
    return 0


def _copy_tracked(root: Path, scratch: Path) -> None:
    import shutil
    import subprocess

    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in names:
        if (root / name).is_file() and not name.startswith(("mutants/", ".venv")):
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, scratch / name)
    (scratch / ".venv").symlink_to((root / ".venv").resolve())


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "recheck":
        return recheck(argv[1])
    if len(argv) >= 2 and argv[0] == "run":
        size = 0
        if argv[1] == "--sample":
            size, argv = int(argv[2]), argv[2:]
        return run(argv[1:], size)
    if len(argv) >= 2 and argv[0] == "skip-annotations":
        return max(skip_annotations(s) for s in argv[1:])
    if len(argv) in (3, 4) and argv[0] == "sample":
        return sample(argv[1], int(argv[2]), *(int(a) for a in argv[3:]))
    if len(argv) >= 2 and argv[0] == "report":
        return report(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
