"""Plan / LP bound per realistic workload: open pools, the presets (with forced caps), and tune.

`python -m provisioner.bench --only presets` prints the table BENCHMARKS.md records; the bound is
computed for the pools of each row (a pool that excludes types raises its own bound).
"""
from __future__ import annotations

import statistics
import time

from ..api import simulate_inputs
from ..cost.lpbound import lower_bound
from ..cost.tune import tune
from ..loader import load_objects
from .realistic import REALISTIC

CAPS = (16, 32, 48, 64)


def _ratio(make, mode, cap=None):
    inputs = load_objects(make(mode, cap))
    result = simulate_inputs(inputs)
    bound = lower_bound(inputs)
    return inputs, result, bound


def run(out, caps=CAPS, with_tune=True) -> dict:
    header = ["workload", "pods", "LP bound (open / presets) $/h", "open", "presets, no cap (before)"] + \
        [f"presets, cap {c} vCPU" for c in caps] + ["presets (shipped)"] + \
        (["tune (from shipped presets)", "tune s", "tune plans"] if with_tune else [])
    print("| " + " | ".join(header) + " |", file=out)
    print("|---|---:|" + "---:|" * (len(header) - 2), file=out)
    columns: dict = {h: [] for h in header[3:]}
    for name, make in REALISTIC.items():
        cells = []
        inputs, result, bound = _ratio(make, "open")
        bound = bound.price_usd_hour
        cells.append(f"{result.pods:,}")
        def cell(res, b, column):
            ratio = res.price_usd_hour / b
            columns[column].append(ratio)
            extra = f" ({len(res.unschedulable)} unsched.)" if res.unschedulable else ""
            return f"{ratio:.2f}x ${res.price_usd_hour:.2f}{extra}"
        open_cell = cell(result, bound, "open")
        _, res, b = _ratio(make, "preset", 0)
        uncapped = cell(res, b.price_usd_hour, "presets, no cap (before)")
        inputs, result, shipped = _ratio(make, "preset")
        pbound = shipped.price_usd_hour
        cells += [f"{bound:.2f} / {pbound:.2f}", open_cell, uncapped]
        for c in caps:
            _, res, b = _ratio(make, "preset", c)
            cells.append(cell(res, b.price_usd_hour, f"presets, cap {c} vCPU"))
        cells.append(cell(result, pbound, "presets (shipped)"))
        if with_tune:
            start = time.perf_counter()
            tuned = tune(inputs, bound=shipped)
            seconds = time.perf_counter() - start
            ratio = tuned.tuned.price_usd_hour / pbound
            columns["tune (from shipped presets)"].append(ratio)
            cells.append(f"{ratio:.3f}x ${tuned.tuned.price_usd_hour:.2f}")  # 3 digits: 10 % is the target
            cells.append(f"{seconds:.1f}")
            cells.append(str(tuned.evaluations))
        print(f"| {name} | " + " | ".join(cells) + " |", file=out)
    medians = [f"{statistics.median(v):.2f}x" if v else "" for k, v in columns.items() if k not in ("tune s", "tune plans")]
    print("| **median** | | | " + " | ".join(medians) + (" | | |" if with_tune else " |"), file=out)
    return columns
