"""`python -m tools.mutation_report`: kill rate per module from mutmut's results (mutants/*.meta).

Killed counts tests failing, timeouts and type-check catches; "no tests" are mutants no test of
the bounded selection (setup.cfg) even executes. The rate is killed / (killed + survived + no
tests); mutants not checked yet are listed apart, so a partial run says so. "tested rate" leaves out
the "no tests" mutants: with tools.mutation_fast dropping the Pulumi-mock runs, those are the
ComponentResource constructors (NodePools/NodeClasses.__init__), judged only by mock-run tests.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {"killed", "timeout", "caught by type check", "segfault"}


def _status(code) -> str:
    from mutmut.stats import status_by_exit_code

    return status_by_exit_code[code]


def main() -> int:
    rows = []
    for meta in sorted(Path("mutants").rglob("*.py.meta")):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        counts = Counter(_status(code) for code in codes.values())
        killed = sum(counts[s] for s in KILLED)
        judged = killed + counts["survived"] + counts["no tests"]
        rows.append((str(meta.relative_to("mutants"))[: -len(".meta")], len(codes), killed, counts["survived"],
                     counts["no tests"], counts["not checked"], killed / judged if judged else None,
                     killed / (killed + counts["survived"]) if killed + counts["survived"] else None))
    print(f"{'module':<42} {'mutants':>7} {'killed':>6} {'survived':>8} {'no tests':>8} {'unchecked':>9} {'kill rate':>9} {'tested rate':>11}")
    for name, total, killed, survived, untested, unchecked, rate, tested in rows:
        shown = f"{rate:.1%}" if rate is not None else "-"
        tested_shown = f"{tested:.1%}" if tested is not None else "-"
        print(f"{name:<42} {total:>7} {killed:>6} {survived:>8} {untested:>8} {unchecked:>9} {shown:>9} {tested_shown:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
