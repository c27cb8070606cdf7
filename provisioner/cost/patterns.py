"""The pattern (configuration) LP bound by column generation: the knapsack pricing, Farley's
bound on an early stop, and a whole-node packing over the patterns found. The problem, the fluid
LP and the argument why both are lower bounds are in `lpbound`."""
from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np

from .lpbound import Bound, _carriers, _Problem, _scale

REL_TOL = 1e-9
MAX_NEW = 25  # improving patterns added per round (partial pricing)


def _undominated(prices, capacity, usable) -> np.ndarray:
    """Pairs no other pair dominates (no dearer, at least as large in every resource, admits every
    class this one admits; ties keep the first)."""
    n = len(prices)
    keep = np.ones(n, dtype=bool)
    for j in range(n):
        others = ((prices <= prices[j]) & np.all(capacity >= capacity[j], axis=1)
                  & np.all(usable >= usable[j], axis=1))
        others[j] = False
        identical = (prices == prices[j]) & np.all(capacity == capacity[j], axis=1) & np.all(usable == usable[j], axis=1)
        others &= ~identical | (np.arange(n) < j)  # of identical pairs the first stays
        if others.any():
            keep[j] = False
    return np.flatnonzero(keep)


@contextlib.contextmanager
def _quiet():
    """HiGHS's MIP solver can print debug lines straight to file descriptor 1 (not through Python),
    which would corrupt `tune -o json`: point fd 1 at /dev/null while it runs."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no real fd 1 (embedded, closed): nothing to guard
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _fractional_cap(values, requests, capacity, upper) -> float:
    """An upper bound on the knapsack below: for each resource alone, the fractional knapsack
    (best value per unit first, each class up to its bound); the smallest over resources."""
    out = float(values @ upper)
    for r in range(requests.shape[1]):
        need = requests[:, r]
        free = need <= 0
        total = float(values[free] @ upper[free])  # classes that do not use r cost nothing of it
        room = capacity[r]
        idx = np.flatnonzero(~free)
        for c in idx[np.argsort(-values[idx] / need[idx], kind="stable")]:
            take = min(upper[c], room / need[c])
            total += values[c] * take
            room -= take * need[c]
            if room <= 0:
                break
        out = min(out, total)
    return out


def _full(n_classes: int, cls, pattern) -> np.ndarray:
    full = np.zeros(n_classes)
    full[cls] = pattern
    return full


def _knapsack(values, requests, capacity, upper):
    """max values . a  s.t.  requests^T a <= capacity, 0 <= a <= upper, a integer.
    Returns (pattern, its value, an upper bound on the optimum)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    with _quiet():
        res = milp(-values, integrality=np.ones(len(values)), bounds=Bounds(0, upper),
                   constraints=LinearConstraint(requests.T, -np.inf, capacity),
                   options={"time_limit": 5.0, "mip_rel_gap": 1e-4})
    if res.x is None:  # no solution within the limit: only the dual bound (or the LP's) is known
        bound = -res.mip_dual_bound if getattr(res, "mip_dual_bound", None) is not None else float(values @ upper)
        return None, 0.0, bound
    pattern = np.floor(res.x + 0.5)
    dual = getattr(res, "mip_dual_bound", None)
    bound = -dual if dual is not None and np.isfinite(dual) else float(values @ pattern)
    return pattern, float(values @ pattern), max(bound, float(values @ pattern))


def _packing(prices, columns, demand, time_limit: float) -> float | None:
    """The cheapest whole number of nodes per generated pattern covering every pod (a MILP over the
    patterns, stopped at `time_limit` with its best solution): the price of a real packing, so an
    upper bound on the optimal plan when topology and limits do not bind (not a lower bound)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csc_matrix

    matrix = csc_matrix(np.asarray([p for _, p in columns]).T)
    with _quiet():
        res = milp(prices[[j for j, _ in columns]], integrality=np.ones(len(columns)), bounds=Bounds(0, np.inf),
                   constraints=LinearConstraint(matrix, demand, np.inf), options={"time_limit": time_limit})
    return float(res.fun) if res.x is not None else None


def pattern_bound(problem: _Problem, fluid: Bound, max_iterations: int, time_limit: float,
                  packing: bool = False) -> Bound:
    """The pattern LP's bound for `problem` by column generation (see lpbound's docstring)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    started = time.process_time()
    scale = _scale(problem.dims)
    capacity = problem.alloc / scale
    n_classes = len(problem.classes)
    requests = np.asarray([np.asarray(r, dtype=float) for _, r, _, _ in problem.classes]) / scale
    demand = np.asarray([n for _, _, n, _ in problem.classes], dtype=float)
    usable = np.zeros((len(problem.prices), n_classes), dtype=bool)
    for c, (pairs, _, _, _) in enumerate(problem.classes):
        usable[list(pairs), c] = True
    live = np.flatnonzero(np.isfinite(problem.prices) & usable.any(axis=1) & ~problem.existing)
    live = live[_undominated(problem.prices[live], capacity[live], usable[live])]
    # Existing room: g_{e,c} >= 0 pods of class c on node e, sum_c g_{e,c} R_c <= room_e (rows after coverage).
    shared = [(int(e), int(c)) for e in np.flatnonzero(problem.existing) for c in np.flatnonzero(usable[e])]
    room_rows = {int(e): i for i, e in enumerate(sorted({e for e, _ in shared}))}
    n_dims = len(problem.dims)
    g_rows, g_cols, g_vals = [], [], []
    for k, (e, c) in enumerate(shared):
        g_rows.append(c)
        g_cols.append(k)
        g_vals.append(-1.0)
        for r in np.flatnonzero(requests[c] > 0):
            g_rows.append(n_classes + room_rows[e] * n_dims + int(r))
            g_cols.append(k)
            g_vals.append(float(requests[c, r]))
    room = np.concatenate([capacity[e] for e in sorted(room_rows)]) if room_rows else np.zeros(0)
    b_ub = np.concatenate([-demand, room])
    repels = np.asarray([rep for *_, rep in problem.classes])
    # Per pair, the most pods of each class one node holds alone (0 where the class may not use it).
    with np.errstate(divide="ignore", invalid="ignore"):
        alone = np.where(requests[None, :, :] > 0, capacity[:, None, :] / requests[None, :, :], np.inf).min(axis=2)
    alone = np.floor(np.minimum(alone + 1e-9, demand[None, :]))
    alone = np.where(repels[None, :], np.minimum(alone, 1.0), alone)
    alone = np.where(usable, alone, 0.0)
    # Start with one homogeneous pattern per (pair, class): always feasible (each class fits a pair).
    columns = []  # (pair, pattern)
    for j in live:
        for cls_index in np.flatnonzero(usable[j]):
            if alone[j, cls_index] >= 1:
                pattern = np.zeros(n_classes)
                pattern[cls_index] = alone[j, cls_index]
                columns.append((int(j), pattern))
    best, iterations, converged, last = 0.0, 0, False, None
    while True:
        iterations += 1
        patterns = np.asarray([p for _, p in columns]).T
        rows, cols = np.nonzero(patterns)
        matrix = coo_matrix((np.concatenate([-patterns[rows, cols], g_vals]),
                             (np.concatenate([rows, g_rows]).astype(int),
                              np.concatenate([cols, np.asarray(g_cols, dtype=int) + len(columns)]).astype(int))),
                            shape=(len(b_ub), len(columns) + len(shared))).tocsc()
        cost = np.concatenate([problem.prices[[j for j, _ in columns]], np.zeros(len(shared))])
        result = linprog(cost, A_ub=matrix, b_ub=b_ub, bounds=(0, None), method="highs")
        if result.status != 0:
            raise RuntimeError(f"LP failed: {result.message}")
        duals = np.maximum(-result.ineqlin.marginals[:n_classes], 0.0)
        # Pricing. A cheap valid cap per pair first (the fractional knapsack on each resource alone);
        # exact knapsacks only where the cap beats the price, most promising first, stopping after
        # MAX_NEW improving patterns: the pairs not solved count in theta with their cap.
        caps = {}
        for j in live:
            cls = np.flatnonzero(usable[j] & (duals > 0) & (alone[j] > 0))
            if len(cls):
                cap = _fractional_cap(duals[cls], requests[cls], capacity[j], alone[j, cls])
                if cap > problem.prices[j] * (1 + REL_TOL):
                    caps[int(j)] = (cap, cls)
        theta = 1.0
        new: list[tuple[int, np.ndarray]] = []
        for j in sorted(caps, key=lambda j: -caps[j][0] / problem.prices[j]):
            cap, cls = caps[j]
            price = problem.prices[j]
            if len(new) >= MAX_NEW:
                theta = max(theta, cap / price)
                continue
            pattern, value, upper = _knapsack(duals[cls], requests[cls], capacity[j], alone[j, cls])
            theta = max(theta, min(upper, cap) / price)
            if pattern is not None and value > price * (1 + 1e-7):
                new.append((j, _full(n_classes, cls, pattern)))
        best = max(best, float(result.fun) / theta)
        last = (columns, result.x[:len(columns)])  # the carriers: the latest restricted optimum, closest to the full one
        if not new:
            converged = theta <= 1 + 1e-6  # else a knapsack stopped at its time limit: Farley's bound
            break
        if iterations >= max_iterations or time.process_time() - started > time_limit:
            break
        columns = columns + new
    nodes = np.zeros(len(problem.prices))
    for (j, _), z in zip(*last):
        nodes[j] += z
    price = max(best, fluid.price_usd_hour)  # both are valid; an early stop may leave Farley below the fluid bound
    packed = _packing(problem.prices, last[0], demand, time_limit) if packing else None
    return Bound(price, n_classes, len(problem.prices), float(nodes.sum()), _carriers(problem, nodes), "patterns",
                 fluid.price_usd_hour, iterations, converged, packed)
