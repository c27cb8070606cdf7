"""`python -m tools.hostile_bench`: worst time and peak memory per hostile input kind.

Each input runs in a fresh subprocess (so peak RSS is the input's own) through the real CLI:
offline.render for config cases, provisioner simulate for manifests (plus the 100,000-deep
document and a 200,001-pod List), policies.check for corrupted builds. Prints one row per case
and the worst figures; the "done when" target is exit 2 in under 2 s with bounded memory.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from tests.harness import PROJECT_DIR
from tests.hostile.corpus import (CONFIG_CASES, MANIFEST_CASES, NEGATIVE_PRICE_CATALOG, _deployment,
                                  block_pod_list, file_type_cases, flow_pod_list, json_pod_list,
                                  never_firing_budget_snapshot, one_line_flow_pod_list, pod_list, write_project)

# Accepted inputs measured for time only (exit 0 expected); every other row must be refused (exit 2).
ACCEPTED = {"consolidate/cron-never-fires-2562047h"}

_RUNNER = """
import sys, time, runpy
started = time.perf_counter()
module, args = sys.argv[1], sys.argv[2:]
sys.argv = [module] + args
code = 0
try:
    runpy.run_module(module, run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
# VmHWM: this process's own peak RSS (ru_maxrss would include the parent's, inherited at fork)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(f"@@ {code} {time.perf_counter() - started:.3f} {peak}", file=sys.stderr)
"""


def _run(module: str, *args: str) -> tuple[int, float, float]:
    try:
        result = subprocess.run([sys.executable, "-c", _RUNNER, module, *args], capture_output=True, text=True,
                                cwd=PROJECT_DIR, timeout=120)
    except subprocess.TimeoutExpired:
        return -1, 120.0, float("nan")  # reported as a hang
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("@@ ")]
    if not line:
        return result.returncode, float("nan"), float("nan")
    _, code, seconds, rss_kib = line[-1].split()
    return int(code), float(seconds), int(rss_kib) / 1024


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for case_id, files, _ in CONFIG_CASES:
            project = write_project(base / f"config-{case_id}", files)
            rows.append((f"config/{case_id}", *_run("offline.render", "test", "--project-dir", str(project),
                                                    "--out", str(project / "build" / "test"))))
        for case_id, content, _ in MANIFEST_CASES:
            path = base / f"manifest-{case_id}.yaml"
            content = pod_list(200_001) if content is None else content
            path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
            rows.append((f"simulate/{case_id}", *_run("provisioner", "simulate", "-f", str(path))))
        # The 200,001-pod List in the other layouts: block style (kubectl's), a flow sequence an item a
        # line, the same on one line, compact JSON.
        for case_id, content in (("pod-list-200k-block", block_pod_list(200_001)),
                                 ("pod-list-200k-flow-sequence", flow_pod_list(200_001)),
                                 ("pod-list-200k-flow-one-line", one_line_flow_pod_list(200_001)),
                                 ("pod-list-200k-json-compact", json_pod_list(200_001))):
            path = base / f"manifest-{case_id}.yaml"
            path.write_text(content)
            rows.append((f"simulate/{case_id}", *_run("provisioner", "simulate", "-f", str(path))))
        catalog, valid = base / "catalog-negative-price.json", base / "deployment.yaml"
        catalog.write_text(NEGATIVE_PRICE_CATALOG)
        valid.write_text(yaml.safe_dump(_deployment()))
        rows.append(("simulate/catalog-negative-price", *_run("provisioner", "simulate", "-f", str(valid),
                                                              "--catalog", str(catalog))))
        # A budget window that never fires at the longest duration: Budget.IsActive walked it minute by minute.
        path = base / "snapshot-cron-never-fires.yaml"
        path.write_text(never_firing_budget_snapshot())
        rows.append(("consolidate/cron-never-fires-2562047h",
                     *_run("provisioner", "consolidate", "-f", str(path), "--at", "2026-11-27T12:00")))
        for case_id, text in (("empty", "[]"), ("deep-100k", "[" * 100_000 + "]" * 100_000),
                              ("options-list", json.dumps([{"type": "a", "options": [1]}])), ("binary", "\x00\x01")):
            build = base / f"build-{case_id}"
            build.mkdir()
            (build / "resources.json").write_text(text)
            rows.append((f"check/{case_id}", *_run("policies.check", str(build))))
        rows.extend(second_round_rows(base))
    return _report(rows)


# Inputs that are not a refusal: they must run to exit 0 within bounded time and memory.
EXPECT_ZERO = ("advisor/",)


def second_round_rows(base: Path) -> list[tuple]:
    """Issue 22's categories: files that are not regular files (named pipes) and a file name with
    ANSI escapes (exit 2 each), and the advisor's plan over 2,000 nodes and 200 Deployments with a
    preferred zone anti-affinity (exit 0; memory linear in nodes plus pods)."""
    rows = []
    for case_id, module, argv, _ in file_type_cases(base / "file-types"):
        rows.append((f"file/{case_id}", *_run(module, *argv)))
    rows.append(("advisor/plan-2000-nodes-200-deployments", *_run("tests.hostile.memory_bench", "2000", "200")))
    return rows


def _report(rows: list[tuple]) -> int:
    width = max(len(r[0]) for r in rows)
    print(f"{'input':<{width}}  exit  seconds  peak MiB")
    for name, code, seconds, mib in rows:
        print(f"{name:<{width}}  {code:>4}  {seconds:7.3f}  {mib:8.1f}")
    worst_time = max(rows, key=lambda r: r[2])
    worst_mem = max(rows, key=lambda r: r[3])
    not_2 = [r[0] for r in rows if r[1] != (0 if r[0] in ACCEPTED or r[0].startswith(EXPECT_ZERO) else 2)]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (time includes interpreter start and imports)")
    zero = ", ".join([*sorted(ACCEPTED), *(f"{p}*" for p in EXPECT_ZERO)])
    print(f"worst time: {worst_time[0]} {worst_time[2]:.3f} s; worst memory: {worst_mem[0]} {worst_mem[3]:.1f} MiB; "
          f"{len(rows)} inputs, exit other than 2 (0 for {zero}): {', '.join(not_2) or 'none'}")
    return 0


if __name__ == "__main__":
    if "--second-round" in sys.argv[1:]:  # only issue 22's categories (about 30 s)
        with tempfile.TemporaryDirectory() as tmp:
            sys.exit(_report(second_round_rows(Path(tmp))))
    sys.exit(main())
