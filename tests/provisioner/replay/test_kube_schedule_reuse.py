"""The replay's scheduling runs (Cluster.kube_schedule binding pending pods to Ready capacity,
Cluster.provision launching NodeClaims) keep, per node, what they derive from the node's pods
(their models, what its allocatable has left, its PreparedNode) from one run to the next while
those pods are the same, and plan without plan_pools' set-up over every bound pod: over any
series of cluster changes each kept value is what a fresh computation gives, and the plan is
plan_pools' own (provisioner/planning.py) over the same cluster."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubefacts import labels as L
from provisioner.api import plan_pools, scheduling_view
from provisioner.loader import load_objects
from provisioner.models import Inputs, PodSpec
from provisioner.replay.cluster import Cluster, SimNode, SimPod
from provisioner.scheduling.existing import PreparedNode, prepare_nodes
from provisioner.scheduling.resources import fits, subtract, total
from tests.provisioner.prov_builders import daemonset, fake_type, node, nodepool, pod, spread, term

_SPECS = load_objects([
    pod("small", labels={"app": "x"}, cpu="500m", memory="256Mi"),
    pod("big", labels={"app": "y"}, cpu="3600m", memory="1Gi"),  # fits a node with at most 400m taken
    pod("anti", labels={"app": "x"}, cpu="250m", anti_affinity=[term(L.HOSTNAME, labels={"app": "x"})]),
    pod("port", labels={"app": "p"}, cpu="100m", host_port=8080),
    pod("spread", labels={"app": "x"}, cpu="200m", spread=[spread(L.HOSTNAME, labels={"app": "x"})]),
    pod("zonal", labels={"app": "z"}, cpu="1", node_selector={"zone": "z1"}),
    daemonset(cpu="100m", memory="64Mi"),
    nodepool(),
])
SPECS = [p.spec for p in _SPECS.pods]
ALLOCATABLE = load_objects([node("n", allocatable={"cpu": "4", "memory": "8Gi", "pods": "20"})]).nodes[0].allocatable
POOLS = [(_SPECS.nodepools[0], [fake_type("small", "2", "4Gi", zones=("z0", "z1")),
                                fake_type("large", "8", "16Gi", zones=("z0", "z1"))])]

OPS = ["pod", "pod", "bind", "bind", "remove", "recreate", "node", "ready", "delete", "disrupt", "nominate",
       "terminate", "relabel", "daemons", "schedule", "provision"]


def _cluster() -> Cluster:
    return Cluster(POOLS, Inputs(nodepools=list(_SPECS.nodepools), daemonsets=list(_SPECS.daemonsets)))


def _add_node(cluster: Cluster, k: int, ready: bool) -> SimNode:
    name = f"n{len(cluster.nodes) + k}-{cluster.fresh_name('x')}"
    labels = {L.HOSTNAME: name, "zone": f"z{k % 2}"}
    sim = SimNode(name, None, "m5.xlarge", "on-demand", f"z{k % 2}", 0.2, labels, (), dict(ALLOCATABLE),
                  dict(ALLOCATABLE), 0.0, ready_at=0.0 if ready else None)
    cluster.nodes[name] = sim
    return sim


def _pod(name: str, k: int) -> SimPod:
    spec = SPECS[k % len(SPECS)]
    return SimPod(name, spec, None, dict(spec.labels), {}, None, 0.0)


def _fresh_models(cluster: Cluster, sim: SimNode) -> list:
    return [cluster.pods[p].model(sim.name) for p in sorted(sim.pods)]


def _fresh_fit(cluster: Cluster, pending: list, nodes: list) -> bool:
    free = [subtract(n.allocatable, total(cluster.pods[p].spec.requests for p in n.pods)) for n in nodes]
    return any(fits(p.spec.requests, left) for p in pending for left in free)


def _fresh_inputs(cluster: Cluster, pending: list, nodes: list) -> Inputs:
    """The inputs Cluster._schedule(pending, nodes, pools) gave plan_pools before anything was kept."""
    names = {n.name for n in nodes}
    bound = [m for n in nodes for m in _fresh_models(cluster, n)]
    nominated = [p.model(p.nominated) for p in cluster.pods.values() if p.node is None and p.nominated in names]
    inputs = Inputs(nodepools=cluster.inputs.nodepools, nodeclasses=cluster.inputs.nodeclasses,
                    pods=[p.model() for p in pending], bound_pods=bound + nominated,
                    daemonsets=cluster.inputs.daemonsets, nodes=[n.existing() for n in nodes],
                    overlays=cluster.inputs.overlays, namespaces=cluster.inputs.namespaces)
    return inputs


def _fresh_plan(cluster: Cluster, pending: list, nodes: list, pools: list):
    return plan_pools(_fresh_inputs(cluster, pending, nodes), pools)


def _fresh_prepared(cluster: Cluster, nodes: list) -> list:
    inputs = _fresh_inputs(cluster, [], nodes)
    existing, bound, _, _ = scheduling_view(inputs)
    return prepare_nodes(existing, bound, inputs.daemonsets)


def _facts(prep: PreparedNode) -> tuple:
    return (prep.node.name, vars(prep.node), [p.name for p in prep.bound], prep.available, prep.schedulable, prep.ports,
            prep.volumes, prep.label_requirements, prep.requirements, [s.key for s in prep.specs],
            [(pos, spec.key, t.topology_key) for pos, spec, t in prep.anti], prep.positions, prep.sort_key)


def _outcome(result) -> tuple:
    return result.to_dict(), result.existing, result.warnings


def _apply(cluster: Cluster, op: str, k: int, now: float) -> None:
    pods = sorted(cluster.pods)
    pending = sorted(cluster.pending)
    nodes = sorted(cluster.nodes)
    ready = [n for n in nodes if cluster.nodes[n].ready]
    if op == "pod":
        cluster.add_pod(_pod(f"default/p{cluster.fresh_name('p')}", k))
    elif op == "bind" and pending and ready:
        cluster.bind(cluster.pods[pending[k % len(pending)]], ready[k % len(ready)], now)
    elif op == "remove" and pods:
        cluster.remove_pod(cluster.pods[pods[k % len(pods)]], now)
    elif op == "recreate" and pods:  # a controller's new pod under the name of one still there
        cluster.add_pod(_pod(pods[k % len(pods)], k + 1))
    elif op == "node":
        _add_node(cluster, k, ready=k % 3 != 0)
    elif op == "ready" and nodes:
        cluster.nodes[nodes[k % len(nodes)]].ready_at = now
    elif op == "delete" and nodes:
        cluster.nodes[nodes[k % len(nodes)]].deleting = True
    elif op == "disrupt" and nodes:
        cluster.nodes[nodes[k % len(nodes)]].disrupting = True
    elif op == "nominate" and pending and nodes:
        cluster.pods[pending[k % len(pending)]].nominated = nodes[k % len(nodes)]
    elif op == "relabel" and nodes:
        sim = cluster.nodes[nodes[k % len(nodes)]]
        sim.labels = {**sim.labels, "zone": f"z{k % 3}"}
    elif op == "daemons":  # the DaemonSets' overhead gone or back
        cluster.inputs.daemonsets = [] if cluster.inputs.daemonsets else list(_SPECS.daemonsets)
    elif op == "terminate" and nodes:
        cluster.terminate(cluster.nodes[nodes[k % len(nodes)]], now)
    elif op == "schedule":
        cluster.kube_schedule(now)
    elif op == "provision":
        cluster.provision(now, 60.0, cluster.fresh_name)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 40)), min_size=1, max_size=40))
def test_what_kube_schedule_keeps_is_what_a_fresh_computation_gives(ops):
    cluster = _cluster()
    nodes = [_add_node(cluster, k, ready=True) for k in range(3)]
    for i, k in enumerate([0, 2, 4, 0, 3, 2]):  # small, anti, spread, small, port, anti
        cluster.add_pod(_pod(f"default/s{i}", k))
        cluster.bind(cluster.pods[f"default/s{i}"], nodes[i % 3].name, 0.0)
    for step, (op, k) in enumerate(ops):
        _apply(cluster, op, k, float(step))
        pending = [p for p in cluster.pending.values() if p.nominated is None]
        ready = [n for n in cluster.nodes.values() if n.ready and not n.deleting and not n.disrupting]
        usable = [n for n in cluster.nodes.values() if not n.deleting and not n.disrupting]
        # a node's end clears what was nominated to it (Cluster.terminate reads pending for it)
        assert all(p.nominated in cluster.nodes for p in cluster.pods.values() if p.nominated is not None)
        for sim in cluster.nodes.values():
            kept, fresh = cluster._bound_models(sim), _fresh_models(cluster, sim)
            assert len(kept) == len(fresh) and all(a is b for a, b in zip(kept, fresh))
        assert cluster._some_fit(pending, ready) == _fresh_fit(cluster, pending, ready)
        for one in pending:  # each pod alone: requests it found fitting nowhere are kept
            assert cluster._some_fit([one], ready) == _fresh_fit(cluster, [one], ready)
        for nodes in (ready, usable):  # the kube-scheduler's nodes, Karpenter's
            assert [_facts(p) for p in cluster._prepared(nodes)] == [_facts(p) for p in _fresh_prepared(cluster, nodes)]
        if pending:
            assert _outcome(cluster._schedule(pending, ready, [])) == _outcome(_fresh_plan(cluster, pending, ready, []))
            assert (_outcome(cluster._schedule(pending, usable, POOLS))
                    == _outcome(_fresh_plan(cluster, pending, usable, POOLS)))
            every = list(cluster.nodes.values())  # nodes being deleted too: plan_pools' own path
            assert (_outcome(cluster._schedule(pending, every, POOLS))
                    == _outcome(_fresh_plan(cluster, pending, every, POOLS)))


def test_an_unchanged_node_keeps_its_prepared_node_and_a_changed_one_is_prepared_again():
    cluster = _cluster()
    a, b = _add_node(cluster, 0, ready=True), _add_node(cluster, 1, ready=True)
    for i in range(3):
        cluster.add_pod(_pod(f"default/a{i}", 0))
        cluster.bind(cluster.pods[f"default/a{i}"], a.name, 0.0)
    cluster.add_pod(_pod("default/b0", 0))
    cluster.bind(cluster.pods["default/b0"], b.name, 0.0)
    cluster.add_pod(_pod("default/wait", 0))
    pending, ready = [cluster.pods["default/wait"]], [a, b]
    cluster._schedule(pending, ready, [])
    kept_a, kept_b = a.prepared[4], b.prepared[4]
    assert kept_b.positions == [3]
    cluster.add_pod(_pod("default/b1", 0))
    cluster.bind(cluster.pods["default/b1"], b.name, 1.0)
    assert b.prepared is None and b.free is None and b.models is None
    cluster._schedule(pending, ready, [])
    assert a.prepared[4] is kept_a and b.prepared[4] is not kept_b
    assert [p.name for p in b.prepared[4].bound] == ["default/b0", "default/b1"]
    kept_b = b.prepared[4]
    cluster.remove_pod(cluster.pods["default/a0"], 2.0)  # b's pods come one place earlier in the run's list
    cluster._schedule(pending, ready, [])
    moved = b.prepared[4]
    assert moved is not kept_b and moved.positions == [2, 3] and moved.requirements is kept_b.requirements
    cluster._schedule(pending, ready, [])
    assert b.prepared[4] is moved


def test_pods_nominated_to_a_node_come_after_every_bound_pod_as_plan_pools_has_them():
    """plan_pools is given the pods bound to the nodes, node by node, then those nominated to
    them, in the cluster's order: a node's positions then run past the other nodes' pods."""
    cluster = _cluster()
    a, b = _add_node(cluster, 0, ready=True), _add_node(cluster, 1, ready=False)
    for name, target in (("default/a0", a), ("default/b0", b), ("default/a1", a)):
        cluster.add_pod(_pod(name, 2))
        cluster.bind(cluster.pods[name], target.name, 0.0)
    for name, target in (("default/to-a", a), ("default/to-b", b), ("default/to-a2", a)):
        cluster.add_pod(_pod(name, 2))
        cluster.pods[name].nominated = target.name
    cluster.add_pod(_pod("default/new", 2))
    pending = [cluster.pods["default/new"]]
    prepared = {p.node.name: p for p in cluster._prepared([a, b])}
    assert [p.name for p in prepared[a.name].bound] == ["default/a0", "default/a1", "default/to-a", "default/to-a2"]
    assert prepared[a.name].positions == [0, 1, 3, 5] and prepared[b.name].positions == [2, 4]
    assert [_facts(p) for p in cluster._prepared([a, b])] == [_facts(p) for p in _fresh_prepared(cluster, [a, b])]
    result = cluster._schedule(pending, [a, b], POOLS)
    assert _outcome(result) == _outcome(_fresh_plan(cluster, pending, [a, b], POOLS))
    assert a.prepared is None  # prepared for that run alone


def _sized(name: str, cpu: int) -> SimPod:
    spec = PodSpec(namespace="default", labels={}, requests={"cpu": cpu, "pods": 1000})
    return SimPod(name, spec, None, {}, {}, None, 0.0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["bind", "remove", "recreate", "wait"]), st.integers(0, 40),
                          st.sampled_from([500, 1000, 2000, 3000])), min_size=1, max_size=40))
def test_requests_kept_as_fitting_nowhere_are_tried_again_once_a_node_changes(ops):
    cluster = _cluster()
    nodes = [_add_node(cluster, k, ready=True) for k in range(2)]
    waiting = [_sized(f"default/w{cpu}", cpu) for cpu in (500, 1000, 2000, 3000, 4000)]
    for one in waiting:
        cluster.add_pod(one)
    for step, (op, k, cpu) in enumerate(ops):
        bound = sorted(p for n in nodes for p in n.pods)
        if op == "bind":
            name = f"default/b{step}"
            cluster.add_pod(_sized(name, cpu))
            cluster.bind(cluster.pods[name], nodes[k % 2].name, float(step))
        elif op == "remove" and bound:
            cluster.remove_pod(cluster.pods[bound[k % len(bound)]], float(step))
        elif op == "recreate" and bound:  # another pod under a bound pod's name: the node loses it
            cluster.add_pod(_sized(bound[k % len(bound)], cpu))
            cluster.remove_pod(cluster.pods[bound[k % len(bound)]], float(step))
        for one in waiting:
            assert cluster._some_fit([one], nodes) == _fresh_fit(cluster, [one], nodes)
        assert cluster._some_fit(waiting, nodes) == _fresh_fit(cluster, waiting, nodes)
