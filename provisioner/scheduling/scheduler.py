"""The provisioning scheduler (pkg/controllers/provisioning/scheduling/scheduler.go).

Pods are queued largest CPU first, then memory; each is placed on the first existing node that
fits (initialized nodes first, then by name), else on an in-flight NodeClaim of this round, tried
fewest pods first as `add` re-sorts them, else on a new NodeClaim from the NodePools by weight
(equal weights by name, descending, as `OrderByWeight` does). Preferences are relaxed one step at
a time on failure, and failed pods are retried while a pass makes progress. Identical pods form
runs: a run of pods without topology of their own is placed in bulk (as many as one-by-one
placement would put on the same target), which yields the same plan as one-by-one placement.
"""
from __future__ import annotations

from kubefacts import labels as L
from kubefacts.labels import PREFER_NO_SCHEDULE
from ..memo import remember
from kubefacts.quantity import format_quantity
from .daemons import overhead_for_node
from .gcpause import gc_paused
from .inflight import InflightClaims
from .instance_selection import Template
from .nodeclaim import WELL_KNOWN, ExistingTarget, NodeClaim, Proposal, hostname_requirement, merge_topology
from .plan import PlannedNodeClaim, Results, build_results
from .preferences import Signature, Variant, initial, relax
from .requirements import Requirements
from .resources import add
from .taints import ports_conflict
from .topology import AFFINITY, ANTI, SPREAD, NodeFilter, Topology, domain_universe

NO_NODEPOOLS = "no NodePool can launch nodes (none given, or their requirements filtered out every instance type)"


class Scheduler:
    def __init__(self, nodepools, daemonsets=(), nodes=(), bound_pods=(), notes=()):
        """nodepools: [(NodePool, [InstanceType])]; notes: why some NodePools were left out."""
        self.nodepools = [(np, its) for np, its in nodepools if np.replicas is None]  # static pools never scale up
        self.daemonsets, self.nodes, self.bound_pods = list(daemonsets), list(nodes), list(bound_pods)
        self.notes = list(notes)

    # --- set-up -----------------------------------------------------------------------------------
    def _setup(self, pods):
        names = {n for p in pods for n in p.spec.requests} | {n for d in self.daemonsets for n in d.spec.requests}
        self.dims = (L.CPU, L.MEMORY, L.PODS) + tuple(sorted(names - {L.CPU, L.MEMORY, L.PODS}))
        # OrderByWeight: heavier first; equal weights by name, descending (nps[a].Name > nps[b].Name).
        ordered = sorted(sorted(self.nodepools, key=lambda item: item[0].name, reverse=True), key=lambda item: -item[0].weight)
        self.templates = []
        for np_, its in ordered:
            tpl = Template(np_, its, self.dims, self.daemonsets, len(self.templates))
            if len(tpl.types):
                self.templates.append(tpl)
            else:
                self.notes.append(f'nodepool "{np_.name}": {tpl.skip_reason}')
        self.tolerate_prefer_no_schedule = any(t.effect == PREFER_NO_SCHEDULE for np_, _ in ordered for t in np_.taints)
        self._universe_cache: dict = {}
        self._selecting: dict = {}  # (topology version, namespace, labels) -> (counting, inverse) groups
        self.topology = Topology(self._universe)
        self.targets: list = []
        self.remaining = {t.name: dict(t.limits) for t in self.templates if t.limits}
        for limits in self.remaining.values():
            limits.setdefault(L.NODES, None)
        self._setup_existing()
        self.n_existing = len(self.targets)
        self.inflight = InflightClaims(self.n_existing)
        self.hostnames = 0
        self.shapes: dict = {}

    def _universe(self, key: str) -> dict:
        if key not in self._universe_cache:
            self._universe_cache[key] = domain_universe(self.nodepools, key)
        return self._universe_cache[key]

    def _setup_existing(self) -> None:
        by_node: dict = {}
        for pod in self.bound_pods:
            by_node.setdefault(pod.node_name, []).append(pod)
        # sortExistingNodes: initialized nodes first, then by name.
        for node in sorted(self.nodes, key=lambda n: (not getattr(n, "initialized", True), n.name)):
            bound = by_node.get(node.name, [])
            used: dict = {}
            daemon_used: dict = {}
            ports = []
            for pod in bound:
                used = add(used, pod.spec.requests)
                ports.extend(pod.spec.host_ports)
                if pod.daemon:
                    daemon_used = add(daemon_used, pod.spec.requests)
            daemon_left, daemon_ports = overhead_for_node(self.daemonsets, node.labels, node.taints, daemon_used)
            available = {k: v - used.get(k, 0) - daemon_left.get(k, 0) for k, v in node.allocatable.items()}
            reqs = Requirements.from_labels(node.labels)
            reqs.add(hostname_requirement(node.labels[L.HOSTNAME]))
            remaining = [available.get(d, 0) for d in self.dims]
            schedulable = all(v >= 0 for v in available.values())
            target = ExistingTarget(node, reqs, remaining, schedulable, ports + list(daemon_ports), len(self.targets))
            target.volume_limits = dict(getattr(node, "volume_limits", None) or {})
            for pod in bound:
                for driver, claim in pod.volumes:
                    target.volume_usage.setdefault(driver, set()).add(claim)
            self.targets.append(target)
            self.topology.existing.append((node.labels, node.taints, Requirements.from_labels(node.labels), [p.spec for p in bound]))
            pool = node.labels.get(L.NODEPOOL)
            if pool in self.remaining:  # existing capacity counts against the NodePool's limits
                limits = self.remaining[pool]
                for k in list(limits):
                    if k == L.NODES:
                        continue
                    limits[k] -= node.capacity.get(k, 0)
                if limits.get(L.NODES) is not None:
                    limits[L.NODES] -= 1000
        nodes = {n.name: n for n in self.nodes}
        for pod in self.bound_pods:  # required anti-affinity of running pods blocks their domains
            node = nodes[pod.node_name]
            for term in pod.spec.anti_affinity:
                tg = self.topology.inverse_group(term, pod.spec)
                if term.topology_key in node.labels:
                    tg.record(node.labels[term.topology_key])

    # --- variants and topology groups -----------------------------------------------------------
    def _variant(self, sig: Signature, level: int) -> Variant | None:
        if level < len(sig.variants):
            return sig.variants[level]
        if sig.exhausted:
            return None
        if level == 0:
            constraints = initial(sig.spec)
        else:
            step = relax(sig.variants[-1].constraints, self.tolerate_prefer_no_schedule)
            if step is None:
                sig.exhausted = True
                return None
            constraints = step[0]
        volumes = sig.spec.volume_alternatives
        alternatives = [Variant(sig, level, constraints, -1, volume) for volume in volumes or (None,)]
        for variant in alternatives:
            self._attach_groups(variant)
            self._share_by_shape(variant)
        sig.variants.append(alternatives[0])
        if len(alternatives) > 1:
            sig.alternatives.append(alternatives)
        return alternatives[0]

    def _share_by_shape(self, variant: Variant) -> None:
        """Pods that differ only in labels or names place alike: let them share what was learnt
        (targets that can never take them, per-NodePool checks, requirement merges)."""
        spec = variant.sig.spec
        shape = (_canonical(variant.requirements), _canonical(variant.strict), variant.tolerations,
                 variant.sig.request_vector, tuple(id(g) for g in variant.groups),
                 tuple(id(g) for g in variant.sig.inverse_selecting), spec.host_ports,
                 tuple(g.selects(spec) for g in variant.groups if g.kind is not ANTI))  # only self-selection matters
        shared = self.shapes.get(shape)
        if shared is None:
            shared = self.shapes[shape] = (len(self.shapes), {}, {})
        variant.id, variant.dead, variant.template_cache = shared

    def _attach_groups(self, variant: Variant) -> None:
        spec, c, topo = variant.sig.spec, variant.constraints, self.topology
        groups = []
        for tsc in c.spread:
            selector = tsc.selector
            for key in tsc.match_label_keys:
                if key in spec.labels and not selector.nothing:
                    selector = selector.with_expression(key, "In", [spec.labels[key]])
            node_filter = NodeFilter(spec.node_selector, c.required_terms, c.tolerations,
                                     tsc.node_taints_policy, tsc.node_affinity_policy)
            groups.append(topo.group(SPREAD, tsc.topology_key, frozenset({spec.namespace}), selector, spec,
                                     tsc.max_skew, tsc.min_domains, node_filter))
        for kind, terms in ((AFFINITY, spec.affinity + tuple(t for _, t in c.affinity_preferred)),
                            (ANTI, spec.anti_affinity + tuple(t for _, t in c.anti_preferred))):
            for term in terms:
                groups.append(topo.group(kind, term.topology_key, term.namespaces, term.selector, spec))
        variant.groups = groups
        # Hostname counts only grow, so these checks reject a node for good in O(1), before any merge.
        variant.host_checks = [(g, 0 if g.kind is ANTI else g.max_skew - (1 if g.selects(spec) else 0))
                               for g in groups + variant.sig.inverse_selecting
                               if g.hostname and (g.kind is ANTI or g.kind is SPREAD)]
        variant.monotone = all(g.kind is ANTI or (g.kind is SPREAD and g.hostname) for g in groups)
        variant.free = not groups and not spec.host_ports and not variant.sig.inverse_selecting

    def _refresh_counting(self, sig: Signature) -> None:
        version = self.topology.version
        if sig.topology_version != version:
            spec = sig.spec
            # Whether a group selects a pod depends on its namespace and labels only, which many
            # signatures share (they differ in requests or constraints).
            key = (version, spec.namespace, tuple(sorted(spec.labels.items())))
            found = self._selecting.get(key)
            if found is None:
                found = remember(self._selecting, key, ([g for g in self.topology.groups.values() if g.selects(spec)],
                                                        [g for g in self.topology.inverse.values() if g.selects(spec)]))
            sig.counting, sig.inverse_selecting = list(found[0]), list(found[1])
            sig.topology_version = version

    # --- placing ----------------------------------------------------------------------------------
    def _add(self, variant: Variant, k: int):
        targets, topology, n_existing = self.targets, self.topology, self.n_existing
        i = variant.next_alive(0)
        while i < n_existing:
            proposal = targets[i].propose(variant, k, topology)
            if proposal.n:
                return targets[i], proposal, None
            if proposal.permanent:
                variant.kill(i)
            i = variant.next_alive(i + 1)
        if self.inflight.claims:
            found = self.inflight.add(variant, k, topology)
            if found is not None:
                return found
        return self._new_nodeclaim([variant], k)[:3]

    def _add_alternatives(self, alternatives: list, k: int):
        """`add` for a pod whose volumes give several topology alternatives: every target in the
        usual order, each alternative in turn on it (CanAdd: the first that fits narrows the node),
        in-flight NodeClaims scanned plainly. (target, proposal, error, the alternative used)."""
        targets, topology = self.targets, self.topology
        for i in range(self.n_existing):
            for variant in alternatives:
                if variant.next_alive(i) != i:
                    continue
                proposal = targets[i].propose(variant, k, topology)
                if proposal.n:
                    return targets[i], proposal, None, variant
                if proposal.permanent:
                    variant.kill(i)
        for claim in self.inflight.in_order():
            for variant in alternatives:
                proposal = claim.propose(variant, k, topology)
                if proposal.n:
                    return claim, proposal, None, variant
        return self._new_nodeclaim(alternatives, k)

    def _new_nodeclaim(self, alternatives: list, k: int):
        """A new NodeClaim from the first NodePool that takes the pod, each volume topology
        alternative tried in turn on it: (claim, proposal, error, the alternative used)."""
        if not self.templates:
            return None, None, "; ".join(self.notes) or NO_NODEPOOLS, None
        request, errors = alternatives[0].sig.request_vector, []
        for tpl in self.templates:
            for variant in alternatives:  # the error of the last alternative tried, as CanAdd returns
                why = self._template_static(variant, tpl)
                if why is None:
                    why, result = self._try_template(variant, tpl, k, request)
                    if result is not None:
                        return result[0], result[1], None, variant
            errors.append(f'nodepool "{tpl.name}": {why}')
        return None, None, "; ".join(errors + self.notes), None

    def _template_static(self, variant: Variant, tpl: Template):
        """Reasons that never change for this variant and NodePool: taints, requirements, size."""
        key = ("static", tpl.index)
        cache = variant.template_cache
        if key not in cache:
            taint = variant.template_taint(tpl)
            if taint is not None:
                cache[key] = (f"did not tolerate taint {taint}", None, None)
            else:
                err = tpl.requirements.compatible(variant.requirements, WELL_KNOWN)
                if err is not None:
                    cache[key] = (f"incompatible requirements, {err}", None, None)
                else:
                    merged = tpl.requirements.merged(variant.requirements)
                    changed = [k for k in variant.requirements.keys() if merged.raw(k) != tpl.requirements.raw(k)]
                    options = tpl.restrict(tpl.all, merged, changed)
                    if len(options) and not len(tpl.fitting(options, variant.sig.request_vector)):
                        options = options[:0]
                    cache[key] = (None, merged, options)
        return cache[key][0]

    def _try_template(self, variant: Variant, tpl: Template, k: int, request):
        _, merged, options = variant.template_cache[("static", tpl.index)]
        unlimited = options
        limits = self.remaining.get(tpl.name)
        if limits is not None:
            nodes_left = limits.get(L.NODES)
            if nodes_left is not None and nodes_left <= 0:
                return "node limits have been exhausted for nodepool", None
            limited = tpl.within_limits(options, limits)
            if len(options) and not len(limited):
                return "all available instance types exceed limits for nodepool", None
            options = limited
        hostname = f"hostname-placeholder-{self.hostnames + 1:04d}"
        reqs = merged.copy()
        host_req = hostname_requirement(hostname)
        if variant.requirements.has(L.HOSTNAME) and not variant.requirements.get(L.HOSTNAME).has(hostname):
            return "incompatible requirements, a new node cannot have the requested hostname", None
        reqs.add(host_req)
        reqs, topo_changed, why = merge_topology(self.topology, variant, reqs, WELL_KNOWN)
        if reqs is None:
            return why, None
        if topo_changed:
            options = tpl.restrict(options, reqs, topo_changed)
            unlimited = tpl.restrict(unlimited, reqs, topo_changed)
        if variant.sig.spec.host_ports and len(options):
            options = options[[not ports_conflict(variant.sig.spec.host_ports, tpl.daemon_ports[i])
                               for i in options.tolist()]]
        fitting = tpl.fitting(options, request)
        if not len(fitting):
            if limits is not None and len(tpl.fitting(unlimited, request)):
                left = ", ".join(f"{k}={format_quantity(k, max(v, 0))}" for k, v in limits.items() if v is not None)
                return f"every instance type large enough would exceed the nodepool's limits (remaining {left})", None
            return tpl.diagnose(tpl.within_limits(tpl.all, limits) if limits else tpl.all, reqs, request,
                                variant.sig.spec.requests), None
        if tpl.has_min_values and (err := tpl.min_values_error(fitting, reqs)):
            return err, None
        self.hostnames += 1
        claim = NodeClaim(tpl, hostname, reqs, fitting, len(self.targets), len(self.dims))
        if limits is not None:  # pessimistically reserve the largest option (subtractMax)
            for key, amount in tpl.max_capacity(fitting).items():
                limits[key] -= amount
            if limits.get(L.NODES) is not None:
                limits[L.NODES] -= 1000
        n = 1
        if variant.free and k > 1 and not tpl.has_min_values:
            n = min(k, tpl.max_count(fitting, claim.used, request))
        total = [n * r for r in request]
        proposal = Proposal(n, requirements=reqs, options=tpl.fitting(fitting, total) if n > 1 else fitting)
        self.targets.append(claim)
        return None, (claim, proposal)

    def _try_schedule(self, sig: Signature, k: int):
        level, err = 0, None
        while True:
            variant = self._variant(sig, level)
            if variant is None:
                return None, 0, err
            if sig.alternatives:
                target, proposal, err, variant = self._add_alternatives(sig.alternatives[level], k)
            else:
                target, proposal, err = self._add(variant, k)
            if proposal is not None:
                return (target, variant, proposal), proposal.n, None
            level += 1

    # --- the loop ---------------------------------------------------------------------------------
    def solve(self, pods) -> Results:
        with gc_paused():
            return self._solve(pods)

    def _solve(self, pods) -> Results:
        self._setup(pods)
        signatures: dict = {}
        order = []
        for index, pod in enumerate(pods):
            sig = signatures.get(pod.spec.key)
            if sig is None:
                sig = signatures[pod.spec.key] = Signature(pod.spec, index, len(signatures))
                sig.request_vector = tuple(pod.spec.requests.get(d, 0) for d in self.dims)
            order.append((sig, index, pod))
        # Largest CPU first, then memory (queue.go); ties keep identical pods together.
        order.sort(key=lambda e: (-e[0].request_vector[0], -e[0].request_vector[1], e[0].first_index, e[1]))
        for sig in signatures.values():  # owners of required anti-affinity exist before anything lands
            for term in sig.spec.anti_affinity:
                sig.inverse_owned.append(self.topology.inverse_group(term, sig.spec))
        inverse = list(self.topology.inverse.values())  # complete: only the loop above creates them
        for sig in signatures.values():
            # A variant needs the inverse groups selecting its pods; the groups counting them are
            # gathered once all first variants (and their groups) exist, when the pods are placed.
            sig.inverse_selecting = [g for g in inverse if g.selects(sig.spec)]
            self._variant(sig, 0)
        runs, last = [], None
        for sig, _, pod in order:
            if sig is last:
                runs[-1][1].append(pod)
            else:
                runs.append((sig, [pod]))
                last = sig
        errors: dict = {}
        progress = True
        while runs and progress:
            progress, failed = False, []
            for sig, run in runs:
                i = 0
                while i < len(run):
                    self._refresh_counting(sig)
                    # Pods with volumes go one at a time: each brings its own claims to a node's CSI limits.
                    sig.current_volumes = run[i].volumes
                    placed, n, err = self._try_schedule(sig, 1 if run[i].volumes else len(run) - i)
                    if not n:
                        failed.append((sig, run[i:]))
                        for pod in run[i:]:
                            errors[pod] = err
                        break
                    target, variant, proposal = placed
                    before = len(target.pods) if target.index >= self.n_existing else -1
                    target.commit(variant, proposal, run[i:i + n], self.topology)
                    if before >= 0:
                        self.inflight.reorder(target, before or None, sig.counting + sig.inverse_owned)
                    if errors:  # pods placed in a later pass failed in an earlier one
                        for pod in run[i:i + n]:
                            errors.pop(pod, None)
                    i += n
                    progress = True
            runs = failed
        return build_results(self.targets, pods, errors)


def _canonical(reqs: Requirements) -> tuple:
    return tuple((key, req._key()) for key, req in sorted(reqs._reqs.items(), key=lambda item: item[0]))


def schedule(pods, nodepools, daemonsets=(), nodes=(), bound_pods=(), notes=()) -> Results:
    return Scheduler(nodepools, daemonsets, nodes, bound_pods, notes).solve(pods)


__all__ = ["Scheduler", "Results", "PlannedNodeClaim", "schedule"]
