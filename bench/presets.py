"""Plan / LP bound per realistic workload: open pools, the presets (with forced caps), and tune.

`python -m bench --only presets` prints the table BENCHMARKS.md records; the bound is
computed for the pools of each row (a pool that excludes types raises its own bound). Ratios are
against the pattern (configuration) LP bound; the fluid bound is printed beside it, and for the
shipped presets also the price of a whole-node packing over the LP's patterns (what an ideal
offline packer, free of Karpenter's packing order, reaches at most).
"""
from __future__ import annotations

import statistics
import time

from provisioner.api import simulate_inputs
from provisioner.cost.lpbound import lower_bound
from provisioner.cost.tune import tune
from provisioner.loader import load_objects
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


def allow_lists(name: str, exhaustive: int = 3, draws: int = 0, seed: int = 7, out=None) -> tuple:
    """Evidence for what requirement changes could reach: Karpenter's plan for the shipped preset
    pool of workload `name` narrowed to `node.kubernetes.io/instance-type In` lists, which every
    narrowing of a pool amounts to. Each (vCPU, memory) shape the pool admits is represented by
    its cheapest type; every list of up to `exhaustive` undominated shapes (no other shape is no
    dearer with at least its vCPUs and memory) is tried, then `draws` random lists of 2-8 of all
    shapes. Returns (baseline $/h, best $/h, best list, plans simulated)."""
    import itertools
    import random

    from provisioner.api import resolve_catalog
    from provisioner.catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
    from provisioner.cost.tune import _Search, requirement_dict
    from kubefacts import labels as L

    inputs = load_objects(REALISTIC[name]("preset"))
    search = _Search(inputs, resolve_catalog(None), DEFAULT_REGION, DEFAULT_ZONES, DEFAULT_SPOT_DISCOUNT)
    base = search.evaluate({})
    pool = max(base.spend, key=base.spend.get)
    reqs = search.pools[pool].requirements
    shapes: dict = {}
    for it in search.admitted(pool, {}):
        prices = [o.price for o in it.offerings if o.available and reqs.get(L.CAPACITY_TYPE).has(o.capacity_type)
                  and reqs.get(L.ZONE).has(o.zone)]
        key = (it.capacity.get(L.CPU, 0), it.capacity.get(L.MEMORY, 0))
        if prices and (key not in shapes or min(prices) < shapes[key][0]):
            shapes[key] = (min(prices), it.name)
    undominated = [v[1] for k, v in shapes.items() if not any(
        k2 != k and k2[0] >= k[0] and k2[1] >= k[1] and v2[0] <= v[0] for k2, v2 in shapes.items())]
    everything = sorted(v[1] for v in shapes.values())
    rng = random.Random(seed)
    lists = [c for size in range(1, exhaustive + 1) for c in itertools.combinations(sorted(undominated), size)]
    lists += [tuple(sorted(rng.sample(everything, rng.randint(2, min(8, len(everything)))))) for _ in range(draws)]
    best, chosen = base.price_usd_hour, ()
    for types in lists:
        key = "node.kubernetes.io/instance-type"
        plan = search.evaluate({pool: {key: requirement_dict(key, "In", types)}})
        if plan.unschedulable <= base.unschedulable and plan.price_usd_hour < best - 1e-9:
            best, chosen = plan.price_usd_hour, types
    if out is not None:
        print(f"{name}: pool {pool}, {len(shapes)} shapes ({len(undominated)} undominated), {search.evaluations} plans: "
              f"baseline ${base.price_usd_hour:.2f}, best ${best:.2f} {list(chosen)}", file=out)
    return base.price_usd_hour, best, chosen, search.evaluations
