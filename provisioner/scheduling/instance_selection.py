"""Per-NodePool instance-type options as numpy arrays, so narrowing a NodeClaim is vectorised.

A Template is a NodePool ready to launch NodeClaims (nodeclaimtemplate.go): its requirements, its
compatible instance types (filtered once, as NewScheduler does), their allocatable minus the
DaemonSet overhead that lands on each, and cached masks per requirement so that a NodeClaim whose
requirements narrow re-filters its options with one vectorised AND per changed key.
"""
from __future__ import annotations

import math

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kubefacts import labels as L
from ..memo import remember
from ..quantity import format_resources
from .daemons import overhead_for_type, template_candidates
from .requirements import Requirement, Requirements
from .taints import HostPort

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import DaemonSet, InstanceType, NodePool, Offering

# what a type's DaemonSet overhead is cached by (see _daemon_key)
_DaemonCandidates = Sequence[tuple["DaemonSet", Sequence[Requirements]]]
# (overhead matrix, whether each type holds it, overhead dicts, host ports) per type
_Overhead = tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], list[dict[str, int]], list[tuple[HostPort, ...]]]
# (type index, offering, option names by price), or (None, None, []) when nothing can launch
_Launch = tuple["int | None", "Offering | None", list[str]]

_NEGATIVE = ("NotIn", "DoesNotExist")


def template_requirements(nodepool: NodePool) -> Requirements:
    reqs = Requirements(nodepool.requirements.values())
    labels = {**nodepool.labels, L.NODEPOOL: nodepool.name, L.NODECLASS: nodepool.node_class_ref.name}
    reqs.add(*Requirements.from_labels(labels).values())
    # DaemonSets may select on these, so NodeClaims simulate them (nodeclaimtemplate.go).
    reqs.add(Requirement.in_(L.REGISTERED, "true"), Requirement.in_(L.INITIALIZED, "true"))
    return reqs


def _type_compatible(type_req: Requirement | None, req: Requirement) -> bool:
    if type_req is None:
        return True
    if type_req.has_intersection(req):
        return True
    return req.operator() in _NEGATIVE and type_req.operator() in _NEGATIVE


class TypeTable:
    """Facts about one list of instance types shared by every Template built on it.

    Many NodePools share a node class, so they share the catalog's type list: the per-requirement
    compatibility masks, offering masks and resource matrices are computed once per list (and
    requirement) instead of once per NodePool and per call.
    """

    def __init__(self, types: list[InstanceType]) -> None:
        self.types = types
        self.valid = np.fromiter((all(v >= 0 for v in it.allocatable.values()) for it in types), dtype=bool,
                                 count=len(types))  # resources.Fits never fits a negative allocatable
        self.keys = frozenset(k for it in types for k in it.requirements.keys())
        self.zone_universe = sorted({o.zone for it in types for o in it.offerings})
        self.ct_universe = sorted({o.capacity_type for it in types for o in it.offerings})
        self._masks: dict[Requirement, npt.NDArray[np.bool_]] = {}
        self._offers: dict[tuple[frozenset[str], frozenset[str]], npt.NDArray[np.bool_]] = {}
        self._columns: dict[tuple[str, str], npt.NDArray[np.int64]] = {}
        self._overheads: dict[tuple[tuple[Any, ...], tuple[str, ...]], _Overhead] = {}
        self._allowed: dict[tuple[Requirement, Requirement], npt.NDArray[np.bool_]] = {}  # offering rows allowed
        self._floors: dict[tuple[Requirement, Requirement], npt.NDArray[np.float64]] = {}

    def mask(self, req: Requirement) -> np.ndarray:
        mask = self._masks.get(req)
        if mask is None:
            if req.key not in self.keys:
                mask = np.ones(len(self.types), dtype=bool)
            else:
                key = req.key
                mask = np.fromiter((_type_compatible(it.requirements.raw(key), req) for it in self.types),
                                   dtype=bool, count=len(self.types))
            self._masks[req] = mask
        return mask

    def offer_mask(self, zones: frozenset[str], cts: frozenset[str]) -> np.ndarray:
        mask = self._offers.get((zones, cts))
        if mask is None:
            mask = np.fromiter((any(o.available and o.zone in zones and o.capacity_type in cts for o in it.offerings)
                                for it in self.types), dtype=bool, count=len(self.types))
            self._offers[(zones, cts)] = mask
        return mask

    def column(self, source: str, name: str) -> np.ndarray:
        """allocatable or capacity of resource `name` for every type, as int64."""
        column = self._columns.get((source, name))
        if column is None:
            column = np.fromiter((getattr(it, source).get(name, 0) for it in self.types), dtype=np.int64,
                                 count=len(self.types))
            self._columns[(source, name)] = column
        return column

    def daemon_overhead(self, key: tuple[Any, ...], daemon_candidates: _DaemonCandidates,
                        dims: tuple[str, ...]) -> _Overhead:
        """For every type: the overhead of these DaemonSet candidates as a (types x dims) matrix,
        whether the type's allocatable holds it, and the per-type overhead dicts and host ports.
        Shared by NodePools whose daemons (by value) and dimensions are equal."""
        found = self._overheads.get((key, dims))
        if found is None:
            entries = [overhead_for_type(daemon_candidates, it) for it in self.types]
            matrix = np.asarray([[o.get(d, 0) for d in dims] for o, _ in entries], dtype=np.int64).reshape(
                len(self.types), len(dims))
            fits = np.fromiter((all(it.allocatable.get(k, 0) >= v for k, v in o.items())
                                for it, (o, _) in zip(self.types, entries)), dtype=bool, count=len(self.types))
            found = self._overheads[(key, dims)] = (matrix, fits, [o for o, _ in entries], [p for _, p in entries])
        return found

    def offering_table(self) -> TypeTable:
        """Every available offering of every type as parallel arrays, built once per table."""
        if not hasattr(self, "off_type"):
            rows = [(i, o) for i, it in enumerate(self.types) for o in it.offerings if o.available]
            zones = {z: n for n, z in enumerate(self.zone_universe)}
            cts = {c: n for n, c in enumerate(self.ct_universe)}
            self.offerings = [o for _, o in rows]
            self.off_zone = np.array([zones[o.zone] for _, o in rows], dtype=np.int64)
            self.off_ct = np.array([cts[o.capacity_type] for _, o in rows], dtype=np.int64)
            self.off_price = np.array([o.price for _, o in rows], dtype=float)
            names = sorted(range(len(self.types)), key=lambda i: self.types[i].name)
            self.name_rank = np.empty(len(self.types), dtype=np.int64)
            self.name_rank[names] = np.arange(len(names))
            self.names = np.array([it.name for it in self.types], dtype=object)
            self.off_type = np.array([i for i, _ in rows], dtype=np.int64)
            # Offerings are grouped by type: the first offering of each type that has any, for
            # per-type minima with one reduceat instead of ufunc.at.
            self.offered_types, self.off_starts = np.unique(self.off_type, return_index=True)
        return self

    def allowed_offerings(self, zone: Requirement, ct: Requirement) -> np.ndarray:
        """Which rows of offering_table() are in these zones and capacity types."""
        allowed = self._allowed.get((zone, ct))
        if allowed is None:
            t = self.offering_table()
            zone_ok = np.array([zone.has(z) for z in self.zone_universe], dtype=bool)
            ct_ok = np.array([ct.has(c) for c in self.ct_universe], dtype=bool)
            allowed = self._allowed[(zone, ct)] = zone_ok[t.off_zone] & ct_ok[t.off_ct]
        return allowed

    def cheapest_offerings(self, mask: np.ndarray) -> np.ndarray:
        """Per type, the price of its cheapest offering among those `mask` keeps (inf: none)."""
        t = self.offering_table()
        cheapest = np.full(len(self.types), np.inf)
        if len(t.off_type):
            cheapest[t.offered_types] = np.minimum.reduceat(np.where(mask, t.off_price, np.inf), t.off_starts)
        return cheapest

    def price_floor(self, zone: Requirement, ct: Requirement) -> np.ndarray:
        """Per type, its cheapest available offering in these zones and capacity types (inf when
        it has none)."""
        floor = self._floors.get((zone, ct))
        if floor is None:
            floor = self._floors[(zone, ct)] = self.cheapest_offerings(self.allowed_offerings(zone, ct))
        return floor


_TABLES: dict[tuple[int, ...], TypeTable] = {}
_MAX_TABLES = 64


# (list object, table) of the last call: the catalog hands every pool the same list
_LAST: tuple[Sequence[InstanceType], TypeTable] | None = None


def type_table(instance_types: Sequence[InstanceType]) -> TypeTable:
    """The shared table of this exact list of types (same objects, same order). The table holds the
    types, so the ids in the key cannot be reused while it is cached."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is instance_types and len(last[1].types) == len(instance_types):
        return last[1]
    key = tuple(map(id, instance_types))
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) >= _MAX_TABLES:
            _TABLES.pop(next(iter(_TABLES)))
        table = _TABLES[key] = TypeTable(list(instance_types))
    _LAST = (instance_types, table)
    return table


def forget_tables() -> None:
    """Drop the shared type tables (a benchmark's cold run)."""
    global _LAST
    _TABLES.clear()
    _LAST = None


def _daemon_key(daemon_candidates: _DaemonCandidates) -> tuple[Any, ...]:
    """What a type's DaemonSet overhead depends on: each daemon's requests, ports and the
    requirement alternatives the NodePool accepts (by value: tables outlive the objects)."""
    return tuple((tuple(sorted(d.spec.requests.items())), tuple(d.spec.host_ports),
                  tuple(tuple(sorted(reqs._reqs.items())) for reqs in cands))
                 for d, cands in daemon_candidates)


class Template:
    def __init__(self, nodepool: NodePool, instance_types: Sequence[InstanceType], dims: tuple[str, ...],
                 daemonsets: Iterable[DaemonSet], index: int) -> None:
        self.nodepool, self.name, self.index = nodepool, nodepool.name, index
        self.taints = nodepool.taints
        self.requirements = template_requirements(nodepool)
        self.dims = dims
        self.limits = dict(nodepool.limits)
        self.has_min_values = any(r.min_values is not None for r in self.requirements.values())
        daemon_candidates = [(d, c) for d in daemonsets
                             if (c := template_candidates(d, self.requirements, self.taints))]
        table = self.table = type_table(instance_types)
        dropped = {"requirements": 0, "offerings": 0, "daemonsets": 0}
        keep = table.valid.copy()
        compatible = keep.copy()
        for key, req in self.requirements._reqs.items():
            if key in table.keys:
                compatible &= table.mask(req)
        dropped["requirements"] = int((keep & ~compatible).sum())
        zone, ct = self.requirements.get(L.ZONE), self.requirements.get(L.CAPACITY_TYPE)
        zones = frozenset(z for z in table.zone_universe if zone.has(z))
        cts = frozenset(c for c in table.ct_universe if ct.has(c))
        offered = compatible & table.offer_mask(zones, cts)
        dropped["offerings"] = int((compatible & ~offered).sum())
        idx = np.flatnonzero(offered)
        alloc = np.stack([table.column("allocatable", d)[idx] for d in dims], axis=1) if len(dims) else \
            np.zeros((len(idx), 0), dtype=np.int64)
        overheads: list[dict[str, int]] = [{}] * len(idx)
        ports: list[tuple[HostPort, ...]] = [()] * len(idx)
        if daemon_candidates:
            matrix, holds, over_dicts, over_ports = table.daemon_overhead(_daemon_key(daemon_candidates),
                                                                          daemon_candidates, dims)
            alloc = alloc - matrix[idx]
            fits = holds[idx] & (alloc >= 0).all(axis=1)
            dropped["daemonsets"] = int((~fits).sum())
            idx, alloc = idx[fits], alloc[fits]
            overheads = [over_dicts[i] for i in idx.tolist()]
            ports = [over_ports[i] for i in idx.tolist()]
        types = [table.types[i] for i in idx.tolist()]
        self.rows = idx  # positions in the shared table
        self.types = types
        self.daemon_overhead = overheads
        self.daemon_ports = ports
        self.alloc = alloc.reshape(len(types), len(dims))
        # One contiguous column per resource: gathering 1-D columns and comparing them is about
        # twice as fast as a 2-D gather reduced along an axis (fitting runs once per pod).
        self._columns = [np.ascontiguousarray(self.alloc[:, d]) for d in range(len(dims))]
        self.zone_universe = table.zone_universe
        self.ct_universe = table.ct_universe
        self.type_keys = table.keys
        limit_keys = [k for k in self.limits if k != L.NODES]
        self.limit_keys = limit_keys
        self.limit_capacity = (np.stack([table.column("capacity", k)[idx] for k in limit_keys], axis=1) if limit_keys
                               else np.zeros((len(types), 0), dtype=np.int64)).reshape(len(types), len(limit_keys))
        # The largest capacity any type has per limited resource: limits at or above it exclude nothing.
        self.limit_ceiling = self.limit_capacity.max(axis=0).tolist() if len(types) else [0] * len(limit_keys)
        self.all = np.arange(len(types))
        self._key_masks: dict[Requirement, npt.NDArray[np.bool_]] = {}
        self._offer_masks: dict[tuple[frozenset[str], frozenset[str]], npt.NDArray[np.bool_]] = {}
        # (options, zone, capacity type) -> launch choice
        self._launched: dict[tuple[bytes, Requirement, Requirement], _Launch] = {}
        # (options, total) -> the options that fit
        self._fit_cache: dict[tuple[int, bytes, tuple[int, ...]], np.ndarray] = {}
        # options -> envelope
        self._envelopes: dict[tuple[int, bytes], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._fronts: dict[tuple[int, bytes], list[tuple[int, ...]]] = {}  # options -> their undominated allocatables
        self._price_floors: dict[tuple[int, bytes], float] = {}  # options -> price_floor
        # options -> largest capacity per limited resource
        self._max_capacity: dict[tuple[int, bytes], list[int]] = {}
        self.skip_reason = None
        if not types:
            why = [f"{n} by {what}" for what, n in dropped.items() if n]
            self.skip_reason = "no instance type is left (excluded: " + (", ".join(why) or "none offered") + ")"
            if dropped["daemonsets"] and not dropped["requirements"] and not dropped["offerings"]:
                self.skip_reason = "no instance type fits its DaemonSet overhead"
        elif self.has_min_values and (err := self.min_values_error(self.all, self.requirements)):
            self.types, self.all = [], np.arange(0)  # NodePool skipped: minValues cannot be met
            self.skip_reason = err

    # --- requirement masks -------------------------------------------------------------------
    def key_mask(self, req: Requirement) -> np.ndarray:
        mask = self._key_masks.get(req)
        if mask is None:
            mask = self._key_masks[req] = self.table.mask(req)[self.rows]
        return mask

    def offer_mask(self, reqs: Requirements) -> np.ndarray:
        zone, ct = reqs.get(L.ZONE), reqs.get(L.CAPACITY_TYPE)
        zones = frozenset(z for z in self.zone_universe if zone.has(z))
        cts = frozenset(c for c in self.ct_universe if ct.has(c))
        mask = self._offer_masks.get((zones, cts))
        if mask is None:
            mask = self._offer_masks[(zones, cts)] = self.table.offer_mask(zones, cts)[self.rows]
        return mask

    def restrict(self, options: np.ndarray, reqs: Requirements, keys: Iterable[str]) -> np.ndarray:
        """Options still compatible after `reqs` changed on `keys` (already compatible with the rest)."""
        offers = False
        for key in keys:
            if key == L.ZONE or key == L.CAPACITY_TYPE:
                offers = True
            if key in self.type_keys and len(options):
                options = options[self.key_mask(reqs.get(key))[options]]
        if offers and len(options):
            options = options[self.offer_mask(reqs)[options]]
        return options

    # --- resources ------------------------------------------------------------------------------
    def fitting(self, options: np.ndarray, total: Sequence[int]) -> np.ndarray:
        if not len(options):
            return options
        columns = self._columns
        if not columns:
            return options
        # NodeClaims narrow through few distinct option sets (a few hundred at 20k pods): remember
        # the answers. Cached arrays are read-only, as every option array is treated.
        key = (options.dtype.num, options.tobytes(), tuple(total))
        found = self._fit_cache.get(key)
        if found is None:
            need = np.asarray(total, dtype=np.int64).tolist()  # int64, as the table (refuses overflow)
            fits = columns[0][options] >= need[0]
            for d in range(1, len(columns)):
                fits &= columns[d][options] >= need[d]
            found = options[fits]
            found.flags.writeable = False
            remember(self._fit_cache, key, found)
        return found

    def envelope(self, options: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per resource, the largest and the smallest allocatable among the options."""
        if not self._columns:
            return (), ()
        key = (options.dtype.num, options.tobytes())
        found = self._envelopes.get(key)
        if found is None:
            high, low = [], []
            for column in self._columns:
                values = column[options]
                high.append(int(values.max()))
                low.append(int(values.min()))
            found = remember(self._envelopes, key, (tuple(high), tuple(low)))
        return found

    def max_count(self, options: np.ndarray, used: Sequence[int], request: Sequence[int]) -> int:
        """How many more pods of `request` fit next to `used` on the best option."""
        idx = [i for i, r in enumerate(request) if r > 0]
        if not idx or not len(options):
            free = self.alloc[options][:, idx] - np.asarray([used[i] for i in idx], dtype=np.int64)
            per = free // np.asarray([request[i] for i in idx], dtype=np.int64)
            return max(int(per.min(axis=1).max()), 0)
        # Only undominated allocatables can hold the most: one that is no larger anywhere holds no
        # more (floor division and min are monotone).
        best = max(min((row[i] - used[i]) // request[i] for i in idx) for row in self.front(options))
        return max(best, 0)

    def front(self, options: np.ndarray) -> list[tuple[int, ...]]:
        """The distinct allocatables (per dimension) of these options that no other one is at
        least as large as everywhere: few, as a larger size of a family dominates the smaller."""
        key = (options.dtype.num, options.tobytes())
        found = self._fronts.get(key)
        if found is None:
            rows = self.alloc[options]
            if 1 < len(rows) <= 2048:  # bounded work; past that every row is kept
                pairs = rows[:, None, :], rows[None, :, :]
                covers: npt.NDArray[np.bool_] = np.all(pairs[0] >= pairs[1], axis=2)  # [j, i]: row j >= row i everywhere
                same: npt.NDArray[np.bool_] = np.all(pairs[0] == pairs[1], axis=2)
                # Row i goes when another row covers it and is larger somewhere, or is equal and comes first.
                rows = rows[~((covers & ~same).any(axis=0) | np.triu(same, 1).any(axis=0))]
            found = remember(self._fronts, key, [tuple(r) for r in rows.tolist()])
        return found

    def within_limits(self, options: np.ndarray, remaining: Mapping[str, int]) -> np.ndarray:
        if not self.limit_keys or not len(options):
            return options
        if all(remaining[k] >= c for k, c in zip(self.limit_keys, self.limit_ceiling)):
            return options  # every type fits (the usual case: limits far above one node)
        # Clamp: a limit beyond int64 (10M GiB in millibytes) is effectively no limit.
        bound = np.asarray([min(remaining[k], 2**62) for k in self.limit_keys], dtype=np.int64)
        fits: npt.NDArray[np.bool_] = (self.limit_capacity[options] <= bound).all(axis=1)
        return options[fits]

    def max_capacity(self, options: np.ndarray) -> dict[str, int]:
        if not self.limit_keys or not len(options):
            return {}
        key = (options.dtype.num, options.tobytes())
        found = self._max_capacity.get(key)
        if found is None:
            found = remember(self._max_capacity, key, self.limit_capacity[options].max(axis=0).tolist())
        return dict(zip(self.limit_keys, found))

    def min_values_error(self, options: np.ndarray, reqs: Requirements) -> str | None:
        """SatisfiesMinValues: enough distinct values per key among the options."""
        for req in reqs.values():
            if req.min_values is None:
                continue
            values: set[str] = set()
            for i in options.tolist():
                values |= self.types[i].requirements.get(req.key).values
            if len(values) < req.min_values:
                return f"minValues requirement is not met for label {req.key} ({len(values)} < {req.min_values})"
        return None

    # --- launch ---------------------------------------------------------------------------------
    def price_floor(self, options: np.ndarray) -> float:
        """The least any of these options could launch for in the zones and capacity types the
        NodePool allows. A NodeClaim's options and requirements only narrow as pods land, and
        consolidation prices its replacement within the NodePool's zones and capacity types
        (replacement.claim_requirements), so no option it keeps launches for less."""
        if not len(options):
            return math.inf
        key = (options.dtype.num, options.tobytes())
        found = self._price_floors.get(key)
        if found is None:
            floor = self.table.price_floor(self.requirements.get(L.ZONE), self.requirements.get(L.CAPACITY_TYPE))
            found = remember(self._price_floors, key, float(floor[self.rows[options]].min()))
        return found

    def launch(self, options: np.ndarray, reqs: Requirements) -> _Launch:
        """(type index, offering, option names by price): reserved, then spot, then on-demand; cheapest.

        Ties break on instance type name, then zone, so plans are reproducible."""
        zone, ct = reqs.get(L.ZONE), reqs.get(L.CAPACITY_TYPE)
        # NodeClaims of one run often end with the same options and offerings: choose once.
        key = (options.tobytes(), zone, ct)
        chosen = self._launched.get(key)
        if chosen is None:
            chosen = self._launched[key] = self._launch(options, zone, ct)
        local, offering, names = chosen
        return local, offering, list(names)

    def _launch(self, options: np.ndarray, zone: Requirement, ct: Requirement) -> _Launch:
        t = self.table.offering_table()
        off_type, off_zone, off_ct, off_price = t.off_type, t.off_zone, t.off_ct, t.off_price
        allowed = self.table.allowed_offerings(zone, ct)
        rows = self.rows[options]  # the options as positions in the shared table
        in_options = np.zeros(len(t.types), dtype=bool)
        in_options[rows] = True
        mask = in_options[off_type] & allowed
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            return None, None, []
        cheapest = self.table.cheapest_offerings(mask)
        ordered = rows[np.lexsort((t.name_rank[rows], cheapest[rows]))]
        for capacity_type in L.CAPACITY_TYPE_PRIORITY:
            if capacity_type not in self.ct_universe:
                continue
            picked = candidates[off_ct[candidates] == self.ct_universe.index(capacity_type)]
            if len(picked):
                best = picked[np.lexsort((off_zone[picked], t.name_rank[off_type[picked]], off_price[picked]))[0]]
                names = t.names[ordered[np.isfinite(cheapest[ordered])]].tolist()
                local = int(np.searchsorted(self.rows, off_type[best]))  # rows are sorted
                return local, t.offerings[best], names
        return None, None, []

    def diagnose(self, options: np.ndarray, reqs: Requirements, total: Sequence[int], requests: dict[str, int]) -> str:
        """Why no option is left (InstanceTypeFilterError): requirements, resources or offerings."""
        compat = np.ones(len(options), dtype=bool)
        for key, req in reqs._reqs.items():
            if key in self.type_keys and len(options):
                compat &= self.key_mask(req)[options]
        fits = (self.alloc[options] >= np.asarray(total, dtype=np.int64)).all(axis=1) if len(options) else compat
        offer = self.offer_mask(reqs)[options] if len(options) else compat
        needs = ", ".join(f"{k}={v}" for k, v in format_resources(requests).items())
        if not compat.any():
            return f"no instance type met the scheduling requirements ({reqs!r})"
        if not (compat & offer).any():
            return f"no instance type which met the scheduling requirements had a required offering ({reqs!r})"
        if not fits.any():
            return f"no instance type has enough resources (requests {needs}, daemonset overhead included per type)"
        return f"no instance type which met the scheduling requirements and had a required offering had enough resources (requests {needs})"
