"""What the disruption passes of one replay keep between them (PassCache), and a pass's view of
the replayed cluster made from it (pass_view): the key of everything the pass reads, and the
state.Cluster that provisioner.state.reader.load_cluster reads from the pass's objects (the
NodePools, EC2NodeClasses, NodeOverlays and DaemonSets as given, then the replay's Nodes and
NodeClaims by name, Pods, PodDisruptionBudgets: provisioner/replay/objects.py), put together from
the reads of earlier passes wherever an object is the same.

The given objects are read by load_cluster while they are the same; each Node and NodeClaim by the
functions load_objects and load_cluster read them with, again only when the facts it is made of
changed (objects.node_facts: as values, so a change in place counts; the readers take only the
presence of a deletionTimestamp, whose value is the pass's time); the pods as pod_reads.py keeps
them. What is done here is the joining, in load_cluster's order and with its warnings. Where the
objects could join otherwise (a kind other than those four among the given objects, a pod with
volumes, a node name with a "/", a Node with a NodePool label where no NodeClaim is, the pod
ceiling) or a read fails, the pass reads all its objects with load_cluster instead (so an error is
the one that read gives). tests/provisioner/replay/test_pass_cache.py compares the two reads.

The disruption API does not change the state it is given (disruption.controller.disruption_pass
is pure), so the models are shared by the passes."""
from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any, Callable

from kubefacts import labels as L
from ..disruption.budgets import budget_active
from ..disruption.pass_memo import PassMemo
from ..errors import InputError
from ..loader.fields import Ctx
from ..loader.karpenter import load_node, load_nodeclaim as load_nodeclaim_model
from ..loader.pods import MAX_PODS
from ..state.cluster import Cluster as State, NodePods
from ..state.reader import load_cluster, load_node_info, load_nodeclaim
from ..state.statenode import StateNode
from .cluster import Cluster
from .objects import node_facts, node_objects, pdb_objects, stamp
from .pod_reads import PodReads

_GIVEN = frozenset({"NodePool", "EC2NodeClass", "NodeOverlay", "DaemonSet"})  # read with nothing of the replay's


class PassCache:
    """What the disruption passes of one replay keep between them: the reads of the objects
    (module docstring), and the key of the last pass that found nothing.

    A pass is a pure function of what it reads (the objects, the pods and their bindings, the
    Consolidatable and Drifted conditions, the PDBs' status, which scheduled budgets are active at
    its time); when all of that equals what the last pass that found nothing read, this pass finds
    nothing too and is skipped (upstream's controller likewise acts on state changes). `skip`
    False runs every pass (the tests compare both)."""

    def __init__(self, skip: bool = True):
        self.skip = skip
        self.quiet: tuple | None = None  # the key of the last pass that found nothing
        self.passes = 0  # passes that ran the disruption API
        self.skipped = 0  # passes skipped as unchanged
        self.given: tuple | None = None  # (the given objects' JSON, the objects, their read or None)
        self.pods = PodReads()  # the pods' reads and the lists of them a state holds
        self.nodes: dict = {}  # node name -> (Node facts, (ExistingNode, NodeInfo, provider ID))
        self.claims: dict = {}  # node name -> (NodeClaim facts, (NodeClaimObject, NodeClaimInfo))
        self.pdbs: tuple = ("", [])  # (the PDB objects' JSON, their Pdb reads)
        self.memo = PassMemo()  # what the disruption API derives of unchanged nodes and pods


class PassView:
    """A pass's inputs: `key` equals another pass's when everything the two read is equal;
    state() the state.Cluster load_cluster reads from the pass's objects, or None when they must
    be read with it."""

    def __init__(self, key: tuple, state: Callable[[], State | None]):
        self.key = key
        self.state = state


def pass_view(cluster: Cluster, objects: list, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime,
              cache: PassCache) -> PassView | None:
    """The pass's view (PassView), or None when its objects must all be read with load_cluster."""
    if len(cluster.pods) >= MAX_PODS or any(not isinstance(o, dict) or o.get("kind") not in _GIVEN for o in objects):
        return None
    facts = [node_facts(n, pools, drifted, now, wall) for n in sorted(cluster.nodes.values(), key=_name)]
    if any(not node[0] or "/" in node[0] for node, _ in facts):
        return None  # another node's NodeClaim could name it (by providerID)
    if not cache.pods.update(cluster):
        return None
    given = json.dumps(objects, sort_keys=True, default=str)
    if cache.given is None or cache.given[0] != given or list(map(id, cache.given[1])) != list(map(id, objects)):
        cache.given = (given, objects, None)
    pdb_objs = pdb_objects(cluster, pdbs)
    pdb_text = json.dumps(pdb_objs, sort_keys=True, default=str) if pdb_objs else ""
    windows = tuple(budget_active(b, wall) for spec in pools.values() for b in spec.budgets)
    # The pods' part: each pod's (read, node) in order, as the lists (pod_reads.py) hold them now.
    key = (given, tuple(facts), pdb_text, list(cache.pods.keys.values), windows) if cache.skip else ()
    return PassView(key, lambda: _state(cache, facts, pdb_objs, pdb_text, stamp(wall, 0)))


def _name(n: Any) -> str:
    return n.name


def _state(cache: PassCache, facts: list, pdb_objs: list, pdb_text: str, deleted_at: str) -> State | None:
    try:
        return _assemble(cache, facts, pdb_objs, pdb_text, deleted_at)
    except InputError:
        return None  # load_cluster raises it as a read of all the objects does


def _assemble(cache: PassCache, facts: list, pdb_objs: list, pdb_text: str, deleted_at: str) -> State | None:
    assert cache.given is not None  # set by pass_view
    given, objects, static = cache.given
    if static is None:
        static = load_cluster(objects, judged=True)
        cache.given = (given, objects, static)
    if cache.pdbs[0] != pdb_text:
        cache.pdbs = (pdb_text, load_cluster(pdb_objs, judged=True).pdbs if pdb_objs else [])
    nodes: list = []
    claims: list = []
    states: list = []
    managed = any(claim is not None for _, claim in facts)
    for node, claim in facts:
        name = node[0]
        hit = cache.nodes.get(name)
        if hit is None or hit[0] != node:
            hit = cache.nodes[name] = (node, _read_node(node_objects(node, None, deleted_at)[0], node[-1]))
        model, meta, _ = hit[1]
        nodes.append(model)
        claim_model = claim_info = None
        if claim is not None:
            read = cache.claims.get(name)
            if read is None or read[0] != claim:
                read = cache.claims[name] = (claim, _read_claim(node_objects(node, claim, deleted_at)[1]))
            claim_model, claim_info = read[1]
            claims.append(claim_model)
        elif not managed and _synthesized(meta):
            return None  # load_cluster makes it a NodeClaim of its own
        states.append(StateNode(node=model, nodeclaim=claim_model, meta=meta, claim=claim_info))
    if len(cache.nodes) > 2 * len(facts) + 100:
        names = {node[0] for node, _ in facts}
        cache.nodes = {k: v for k, v in cache.nodes.items() if k in names}
        cache.claims = {k: v for k, v in cache.claims.items() if k in names}

    pods = cache.pods
    by_name = {s.name: s for s in states}
    groups = dict(pods.groups)
    for name, group in pods.groups.items():
        if name in by_name:
            by_name[name].pods = group.infos
    bound = list(pods.bound.values)
    missing: list = []
    stray = [name for name in pods.on if name not in by_name]
    if stray:  # load_objects: a pod bound to a node not in the input is left out, with a warning
        missing = [f"pod {m.name} is bound to node {m.node_name}, which is not in the input; ignored"
                   for m in bound if m.node_name in stray]
        bound = [m for m in bound if m.node_name not in stray]
        for name in stray:  # its PodInfos stay in the state, its models do not
            infos = groups[name].infos
            groups[name] = NodePods(infos, [None] * len(infos), [], [])
    inputs = copy.copy(static.inputs)
    inputs.nodes = static.inputs.nodes + nodes
    inputs.nodeclaims = static.inputs.nodeclaims + claims
    inputs.bound_pods = static.inputs.bound_pods + bound
    inputs.pods = static.inputs.pods + pods.pending.values
    inputs.ignored = static.inputs.ignored + pods.ignored.values
    inputs.warnings = static.inputs.warnings + missing
    state = copy.copy(static)
    state.inputs = inputs
    state.nodes = static.nodes + states
    state.pods = static.pods + pods.infos.values
    state.pdbs = static.pdbs + cache.pdbs[1]
    state.nodeclaims_given = static.nodeclaims_given or bool(claims)
    # The pods are all the replay's (the given objects hold none), so its groups are the state's.
    state.node_pods = groups if not static.pods and not static.inputs.bound_pods else None
    return state


def _synthesized(meta: Any) -> bool:
    """load_cluster gives a Node with a NodePool label a NodeClaim of its own when the objects hold none."""
    return L.NODEPOOL in meta.labels


def _read_node(obj: dict, claimed: bool) -> tuple:
    """(ExistingNode, NodeInfo, provider ID) of a replayed Node, as load_objects (its NodeClaim,
    when it has one, names it) and load_cluster read it."""
    ctx = Ctx(None, "Node", obj["metadata"]["name"])
    return (load_node(obj, ctx, allow_empty=claimed), *load_node_info(obj, ctx))


def _read_claim(obj: dict | None) -> tuple:
    """(NodeClaimObject, NodeClaimInfo) of a replayed NodeClaim, as load_objects and load_cluster read it."""
    assert obj is not None  # made of a NodeClaim's facts
    ctx = Ctx(None, "NodeClaim", obj["metadata"]["name"])
    return load_nodeclaim_model(obj, ctx), load_nodeclaim(obj, ctx)[0]
