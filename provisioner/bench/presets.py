"""Plan / LP bound per realistic workload: open pools, the presets (with forced caps), and tune.

`python -m provisioner.bench --only presets` prints the table BENCHMARKS.md records; the bound is
computed for the pools of each row (a pool that excludes types raises its own bound). Ratios are
against the pattern (configuration) LP bound; the fluid bound is printed beside it, and for the
shipped presets also the price of a whole-node packing over the LP's patterns (what an ideal
offline packer, free of Karpenter's packing order, reaches at most).
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
PACKING_TIME_LIMIT_S = 20.0


def _ratio(make, mode, cap=None, packing=False):
    inputs = load_objects(make(mode, cap))
    result = simulate_inputs(inputs)
    bound = lower_bound(inputs, packing=packing)
    return inputs, result, bound


def run(out, caps=CAPS, with_tune=True) -> dict:
    header = ["workload", "pods", "LP bound, patterns (fluid) $/h: open / presets", "open", "presets, no cap (before)"] + \
        [f"presets, cap {c} vCPU" for c in caps] + ["presets (shipped)", "whole-node packing (shipped pools)"] + \
        (["tune (from shipped presets)", "tune / fluid bound", "tune s (bound included)", "tune plans"] if with_tune else [])
    print("| " + " | ".join(header) + " |", file=out)
    print("|---|---:|" + "---:|" * (len(header) - 2), file=out)
    columns: dict = {h: [] for h in header[3:]}
    for name, make in REALISTIC.items():
        cells = []
        inputs, result, bound = _ratio(make, "open")
        cells.append(f"{result.pods:,}")

        def cell(res, b, column):
            ratio = res.price_usd_hour / b.price_usd_hour
            columns[column].append(ratio)
            extra = f" ({len(res.unschedulable)} unsched.)" if res.unschedulable else ""
            return f"{ratio:.3f}x ${res.price_usd_hour:.2f}{extra}"
        open_cell = cell(result, bound, "open")
        _, res, b = _ratio(make, "preset", 0)
        uncapped = cell(res, b, "presets, no cap (before)")
        inputs, result, shipped = _ratio(make, "preset", packing=True)
        cells += [f"{bound.price_usd_hour:.2f} ({bound.fluid_usd_hour:.2f}) / "
                  f"{shipped.price_usd_hour:.2f} ({shipped.fluid_usd_hour:.2f})", open_cell, uncapped]
        for c in caps:
            _, res, b = _ratio(make, "preset", c)
            cells.append(cell(res, b, f"presets, cap {c} vCPU"))
        cells.append(cell(result, shipped, "presets (shipped)"))
        packed = shipped.packing_usd_hour
        if packed is not None:
            columns["whole-node packing (shipped pools)"].append(packed / shipped.price_usd_hour)
            cells.append(f"{packed / shipped.price_usd_hour:.3f}x ${packed:.2f}")
        else:
            cells.append("none in time")
        if with_tune:
            start = time.perf_counter()
            tuned = tune(inputs)  # computes its own bound, as `provisioner tune` does: timed end to end
            seconds = time.perf_counter() - start
            price = tuned.tuned.price_usd_hour
            columns["tune (from shipped presets)"].append(price / shipped.price_usd_hour)
            columns["tune / fluid bound"].append(price / shipped.fluid_usd_hour)
            cells.append(f"{price / shipped.price_usd_hour:.3f}x ${price:.2f}")  # 3 digits: 10 % is the target
            cells.append(f"{price / shipped.fluid_usd_hour:.3f}x")
            cells.append(f"{seconds:.1f}")
            cells.append(str(tuned.evaluations))
        print(f"| {name} | " + " | ".join(cells) + " |", file=out, flush=True)
    medians = [f"{statistics.median(v):.3f}x" if v else "" for k, v in columns.items() if k not in ("tune s (bound included)", "tune plans")]
    print("| **median** | | | " + " | ".join(medians) + (" | | |" if with_tune else " |"), file=out)
    return columns
