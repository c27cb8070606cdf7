"""In-flight NodeClaims of a scheduling run, in Karpenter's order (scheduler.go `add` sorts
`newNodeClaims` by pod count, fewest first, before every pod).

The order is kept incrementally as a sorted numpy array of positions (keys pods << 32 | position).
Per pod shape (Variant, shared by shape), numpy masks drop the NodeClaims that can never take it
and those that rejected it at their current commit generation while its topology groups stood
still (a rejection "for now"); NodeClaims over a hostname group's limit (counts kept per
NodeClaim) are dead in bulk, and NodeClaims pinned outside a zonal affinity's domains or a zonal
spread's skew are rejected for now in bulk, each exactly where `propose` would reject them. Bulk
placement stops where one-by-one placement would move on to the next NodeClaim.

A scan never starts over without need: each shape keeps a resume point (every NodeClaim ordered
before it rejected the shape), and only the NodeClaims created or committed to since (a log) are
looked at again before it, so a hostname anti-affinity pod no longer looks at every open
NodeClaim. The first few NodeClaims of a scan are checked one by one in Python (most pods land
there), the rest with numpy.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .requirements import Requirements
from .topology import AFFINITY, SPREAD

if TYPE_CHECKING:
    from .nodeclaim import NodeClaim, Proposal
    from .preferences import Variant
    from .topology import Topology, TopologyGroup

_CLAIMS = "claims"  # key of the per-variant NodeClaim masks in Variant.dead (beside the existing-target skip pointers)
_HEAD = 8  # NodeClaims looked at one by one before masking the rest with numpy
_END = 1 << 62  # a resume key after every NodeClaim's
_EPOCH = 1 << 32  # rejections for now are marked gen + epoch; a new epoch voids them all (gens stay below)
# Up to this many NodeClaims, `add` proposes directly: the masks only skip proposals that would be
# refused, and a consolidation simulation ends at its second NodeClaim.
_DIRECT = 1


class InflightClaims:
    def __init__(self, n_existing: int) -> None:
        self.n_existing = n_existing  # NodeClaim target indices start here
        self.claims: list[NodeClaim] = []  # by position (creation order)
        self.order = np.zeros(0, dtype=np.int64)
        self.order_keys = np.zeros(0, dtype=np.int64)
        self.keys_pos = np.zeros(64, dtype=np.int64)  # per position, its key in `order_keys`
        self.log: list[int] = []  # positions of the NodeClaims created or committed to, in that order
        self.gen = np.zeros(64, dtype=np.int64)  # commits per NodeClaim
        # label key -> per-position code of a NodeClaim's single value for it (-1: not pinned),
        # kept for the keys zonal affinities ask about.
        self.pinned: dict[str, npt.NDArray[np.int64]] = {}
        self.pin_codes: dict[str, dict[str, int]] = {}
        # hostname topology group -> per-position count of its pods on that NodeClaim, kept for the
        # groups of variants' host checks (a count changes only by a commit to that NodeClaim).
        self.host_counts: dict[TopologyGroup, npt.NDArray[np.int64]] = {}
        # A lone NodeClaim is proposed to directly (`add`): its order, key, log and counts are
        # made when a second one comes or the masks are first used (_ordered), not at each commit.
        self.lone = True

    def state(self, variant: Variant) -> list[Any]:
        """Per variant (shape): claims that never take it, claims that rejected it at some commit
        generation while its topology groups stood still (a rejection for now, marked as generation +
        epoch), the groups' versions, whether any rejection for now is marked in this epoch, a resume
        point (see `_sequence`) and the epoch."""
        cap = len(self.gen)
        state = variant.dead.get(_CLAIMS)
        if state is None:
            state = variant.dead[_CLAIMS] = [np.zeros(cap, dtype=bool), np.full(cap, -1, dtype=np.int64), None, False,
                                             None, 0]
        elif len(state[0]) < cap:
            grow = cap - len(state[0])
            state[0] = np.concatenate([state[0], np.zeros(grow, dtype=bool)])
            state[1] = np.concatenate([state[1], np.full(grow, -1, dtype=np.int64)])
        versions = tuple(g.version for g in variant.groups) + tuple(g.version for g in variant.sig.inverse_selecting)
        if versions != state[2]:
            if state[3]:  # void the rejections for now: a new epoch (O(1), not a fill per version)
                state[5] += _EPOCH
                state[3] = False
            state[2] = versions
            state[4] = None  # rejections for now may be void: no resume point
        return state

    def add(self, variant: Variant, k: int, topology: Topology) -> tuple[NodeClaim, Proposal, None] | None:
        """scheduler.go `add`: the first in-flight NodeClaim, fewest pods first, that takes the pod:
        (claim, proposal, None), or None."""
        if self.claims and len(self.claims) <= _DIRECT:  # the masks pay off over many NodeClaims, not one
            claim = self.claims[0]
            proposal = claim.propose(variant, k, topology)  # _cap: no NodeClaim after it to stop at
            return (claim, proposal, None) if proposal.n else None
        self._ordered()
        state = self.state(variant)
        dead, rejected_at, epoch = state[0], state[1], state[5]
        gen, claims = self.gen, self.claims
        # A zonal (non-hostname) required affinity admits only domains that already hold a
        # matching pod, a zonal spread only domains within its skew: NodeClaims pinned elsewhere are
        # rejected (for now) in bulk, without proposals (propose would reject them too).
        excluded = []
        for g in variant.groups:
            if g.kind is AFFINITY and not g.hostname and g.nonempty:
                pod_domains = variant.strict.get(g.key)
                allowed = [d for d, c in g.counts.items() if c > 0 and pod_domains.has(d)]
                if allowed:
                    codes, table = self._pinned_codes(g.key)
                    # ok[code] says whether a NodeClaim pinned to that value may take the pod; the
                    # extra last entry (code -1: not pinned) is always allowed.
                    ok = np.zeros(len(table) + 1, dtype=bool)
                    ok[[table[d] for d in allowed if d in table]] = True
                    ok[-1] = True
                    excluded.append((codes, ok))
            elif g.kind is SPREAD and not g.hostname:
                # topology.py `_spread` on a NodeClaim pinned to one domain: that domain, if it is
                # known and within the skew of the global minimum, else nothing (a rejection).
                codes, table = self._pinned_codes(g.key)
                if table:
                    extra = 1 if g.selects(variant.sig.spec) else 0
                    minimum = g._min_count(variant.strict.get(g.key))
                    ok = np.ones(len(table) + 1, dtype=bool)
                    domain_counts = g.counts
                    for domain, code in table.items():
                        count = domain_counts.get(domain)
                        ok[code] = count is not None and count + extra - minimum <= g.max_skew
                    excluded.append((codes, ok))
        # NodeClaim.propose's first check, in bulk: hostname counts only grow, so a NodeClaim holding
        # more of a group's pods than the variant allows rejects it for good.
        host = [(self._host_counts(g), limit) for g, limit in variant.host_checks]
        bulk = k > 1 and variant.free  # propose only places more than one pod of a free variant
        seq = self._sequence(state)
        # Most pods land on one of the first NodeClaims: look at a short head one by one (cheaper
        # than numpy calls on a handful of items), then mask the rest in chunks.
        for pos in seq[:_HEAD].tolist():
            for counts, limit in host:
                if counts[pos] > limit:
                    dead[pos] = True
            if dead[pos] or rejected_at[pos] == gen[pos] + epoch:
                continue
            if any(not ok[codes[pos]] for codes, ok in excluded):
                rejected_at[pos] = gen[pos] + epoch
                state[3] = True
                continue
            found = self._propose(variant, claims[pos], pos, k, bulk, topology, state)
            if found is not None:
                return found
        n, start, step = len(seq), _HEAD, 64
        while start < n:
            chunk = seq[start:start + step]
            for counts, limit in host:
                over = counts[chunk] > limit
                if over.any():
                    dead[chunk[over]] = True
            alive = ~(dead[chunk] | (rejected_at[chunk] == (gen[chunk] + epoch if epoch else gen[chunk])))
            for codes, ok in excluded:
                elsewhere = alive & ~ok[codes[chunk]]
                if elsewhere.any():
                    hit = chunk[elsewhere]
                    rejected_at[hit] = gen[hit] + epoch
                    state[3] = True
                    alive &= ~elsewhere
            for i in np.flatnonzero(alive).tolist():
                pos = int(chunk[i])
                found = self._propose(variant, claims[pos], pos, k, bulk, topology, state)
                if found is not None:
                    return found
            start += step
            step = n
        state[4] = (_END, len(self.log))  # every NodeClaim rejects it
        return None

    def in_order(self) -> list[NodeClaim]:
        """The NodeClaims in the order `add` tries them (fewest pods first, then creation order)."""
        self._ordered()
        return [self.claims[pos] for pos in self.order.tolist()]

    def _propose(self, variant: Variant, claim: NodeClaim, pos: int, k: int, bulk: bool, topology: Topology,
                 state: list[Any]) -> tuple[NodeClaim, Proposal, None] | None:
        # Bulk placement may only put on `claim` the pods one-by-one placement would (see _cap);
        # capping k before proposing gives what proposing k and then the cap would.
        proposal = claim.propose(variant, self._cap(variant, claim, k) if bulk else k, topology)
        if proposal.n:
            # Every NodeClaim before it in the order rejected the variant: resume here next time.
            state[4] = (int(self.keys_pos[pos]), len(self.log))
            return claim, proposal, None
        if proposal.permanent:
            state[0][pos] = True
        else:
            state[1][pos] = self.gen[pos] + state[5]
            state[3] = True
        return None

    def _sequence(self, state: list[Any]) -> npt.NDArray[np.int64]:
        """The NodeClaims (positions) to look at, in order. A variant's resume point (key, log
        length) says every NodeClaim ordered before `key` rejected it (dead, or for now at its
        commit generation while its groups stood still): of those only the ones committed to or
        created since (the log) can have changed their answer, so the rest is skipped."""
        order = self.order
        resume = state[4]
        if resume is None:
            return order
        key, seen = resume
        changed = self.log[seen:]
        if len(changed) * 4 > len(order):  # a long gap: not worth it
            return order
        at = int(self.order_keys.searchsorted(key))
        if not changed:
            return order[at:]
        if len(changed) <= 16:  # usually one or two: cheaper in Python than in numpy
            keys = self.keys_pos
            before = sorted({pos for pos in changed if keys[pos] < key}, key=keys.__getitem__)
            if not before:
                return order[at:]
            return np.concatenate((np.asarray(before, dtype=np.int64), order[at:]))
        moved = np.unique(np.asarray(changed, dtype=np.int64))
        keys = self.keys_pos[moved]
        earlier = keys < key
        if not earlier.any():
            return order[at:]
        moved, keys = moved[earlier], keys[earlier]
        return np.concatenate((moved[np.argsort(keys)], order[at:]))

    def _cap(self, variant: Variant, claim: NodeClaim, k: int) -> int:
        """At most the pods that still find `claim` first in (pods, creation) order, before the next
        NodeClaim after it in the order not known to reject this variant."""
        state = variant.dead[_CLAIMS]
        pos = claim.index - self.n_existing
        at = int(self.order_keys.searchsorted(self.keys_pos[pos])) + 1
        step = 16
        while at < len(self.order):  # the next one is usually close: look at a few first
            rest = self.order[at:at + step]
            alive = ~(state[0][rest] | (state[1][rest] == self.gen[rest] + state[5]))
            if alive.any():
                nxt = self.claims[int(rest[int(alive.argmax())])]
                return min(k, len(nxt.pods) - len(claim.pods) + (1 if claim.index < nxt.index else 0))
            at += step
            step = len(self.order)
        return k

    def _pinned_codes(self, key: str) -> tuple[npt.NDArray[np.int64], dict[str, int]]:
        """Per-position codes of the NodeClaims' single value for `key` (tracked from now on)."""
        if key not in self.pinned:
            table = self.pin_codes.setdefault(key, {})
            codes = np.full(len(self.gen), -1, dtype=np.int64)
            for pos, claim in enumerate(self.claims):
                codes[pos] = _pin_code(claim.requirements, key, table)
            self.pinned[key] = codes
        return self.pinned[key], self.pin_codes[key]

    def _host_counts(self, group: TopologyGroup) -> npt.NDArray[np.int64]:
        counts = self.host_counts.get(group)
        if counts is None:
            counts = self.host_counts[group] = np.zeros(len(self.gen), dtype=np.int64)
            for pos, claim in enumerate(self.claims):
                counts[pos] = group.counts.get(claim.hostname, 0)
        return counts

    def reorder(self, claim: NodeClaim, before: int | None, recorded: Iterable[TopologyGroup] | None = None) -> None:
        """Keep `order` sorted after `claim` went from `before` pods (None: new) to its count now;
        `recorded`: the topology groups the commit recorded its pods in (None: any)."""
        pos = claim.index - self.n_existing
        if self.lone and (before is not None or not self.claims):
            if before is None:
                self.claims.append(claim)
            return  # the lone NodeClaim: nothing to keep in order yet
        self._ordered()
        if before is None:
            self.claims.append(claim)
            if pos >= len(self.gen):
                self.gen = np.concatenate([self.gen, np.zeros(len(self.gen), dtype=np.int64)])
                self.keys_pos = np.concatenate([self.keys_pos, np.zeros(len(self.keys_pos), dtype=np.int64)])
                for label, codes in self.pinned.items():
                    self.pinned[label] = np.concatenate([codes, np.full(len(codes), -1, dtype=np.int64)])
                for group, counts in self.host_counts.items():
                    self.host_counts[group] = np.concatenate([counts, np.zeros(len(counts), dtype=np.int64)])
            old = None
        else:
            self.gen[pos] += 1
            old = int(self.order_keys.searchsorted((before << 32) | pos))
        hostname = claim.hostname
        host_counts = self.host_counts
        if recorded is None or before is None:
            for group, counts in host_counts.items():  # the commit recorded its pods
                counts[pos] = group.counts.get(hostname, 0)
        else:  # only the groups the commit recorded in changed their count for this hostname
            for group in recorded:
                group_counts = host_counts.get(group)
                if group_counts is not None:
                    group_counts[pos] = group.counts.get(hostname, 0)
        for label, codes in self.pinned.items():  # its requirements may have narrowed
            codes[pos] = _pin_code(claim.requirements, label, self.pin_codes[label])
        key = (len(claim.pods) << 32) | pos
        self.keys_pos[pos] = key
        self.log.append(pos)
        keys, order = self.order_keys, self.order
        at = int(keys.searchsorted(key))
        if old is None:
            self.order_keys = np.concatenate((keys[:at], (key,), keys[at:]))
            self.order = np.concatenate((order[:at], (pos,), order[at:]))
        else:  # counts only grow: the claim moves right, from `old` to just before `at`
            keys[old:at - 1] = keys[old + 1:at]
            order[old:at - 1] = order[old + 1:at]
            keys[at - 1], order[at - 1] = key, pos

    def _ordered(self) -> None:
        """Leave the lone mode: the NodeClaim made so far gets its key, order and log entry, as
        `reorder` would have kept them (no mask, count or rejection refers to it yet, so its
        commit generation may start at 0)."""
        if not self.lone:
            return
        self.lone = False
        if self.claims:
            key = len(self.claims[0].pods) << 32
            self.keys_pos[0] = key
            self.order = np.zeros(1, dtype=np.int64)
            self.order_keys = np.asarray([key], dtype=np.int64)
            self.log.append(0)


def _pin_code(reqs: Requirements, key: str, table: dict[str, int]) -> int:
    req = reqs.raw(key)
    if req is None or req.complement or len(req.values) != 1:
        return -1
    (value,) = req.values
    return table.setdefault(value, len(table))
