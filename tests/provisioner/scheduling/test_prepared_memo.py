"""prepare_nodes with a memo (scheduling.existing.PreparedMemo) gives what it gives without one,
over any series of changes between calls: a PreparedNode is reused only while its node reads the
same, its pods are the very same objects and the DaemonSets have the same content."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.loader import load_objects
from provisioner.scheduling.existing import ExistingNodes, PreparedMemo, PreparedNode, prepare_grouped, prepare_nodes
from tests.provisioner.prov_builders import daemonset, node, pod, term

CHANGES = st.lists(st.tuples(st.sampled_from(["drop-pod", "add-pod", "relabel", "resize", "daemon", "reread-pod",
                                              "anti-pod"]), st.integers(0, 5)), max_size=6)


def _read(nodes: dict, pods: list, daemon_cpu: str):
    objs = [node(name, labels={"kubernetes.io/hostname": name, **labels}, allocatable={"cpu": cpu, "memory": "8Gi",
                                                                                        "pods": "20"})
            for name, (labels, cpu) in sorted(nodes.items())]
    objs.append(daemonset(cpu=daemon_cpu, memory="64Mi"))
    inputs = load_objects(objs + [p for p, _ in pods])
    return inputs


def _facts(prep: PreparedNode) -> tuple:
    return (prep.node.name, vars(prep.node), [p.name for p in prep.bound], prep.available, prep.schedulable, prep.ports,
            prep.volumes, prep.label_requirements, prep.requirements, [s.key for s in prep.specs],
            [(pos, spec.key, t.topology_key) for pos, spec, t in prep.anti], prep.positions, prep.sort_key)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.lists(st.integers(0, 3), max_size=8), st.lists(CHANGES, min_size=1, max_size=4))
def test_prepare_nodes_with_a_memo_is_prepare_nodes_afresh(n_nodes, placement, steps):
    nodes = {f"n{i}": ({}, "4") for i in range(n_nodes)}
    pods = [(pod(f"p{k}", node_name=f"n{i % n_nodes}", cpu="500m", memory="256Mi"), None) for k, i in enumerate(placement)]
    daemon_cpu = "100m"
    memo = PreparedMemo()
    kept: dict = {}  # pod name -> its model, reused while the pod is unchanged (as the replay does)
    counter = len(pods)
    for step, changes in enumerate([[]] + steps):
        for change, k in changes:
            names = sorted(nodes)
            target = names[k % len(names)]
            if change == "drop-pod" and pods:
                pods.pop(k % len(pods))
            elif change in ("add-pod", "anti-pod"):
                extra = {"anti_affinity": [term("kubernetes.io/hostname", labels={"app": "x"})]} if change == "anti-pod" else {}
                pods.insert(k % (len(pods) + 1), (pod(f"p{counter}", node_name=target, cpu="250m", labels={"app": "x"},
                                                      **extra), None))
                counter += 1
            elif change == "relabel":
                nodes[target] = ({"zone": f"z{step}"}, nodes[target][1])
            elif change == "resize":
                nodes[target] = (nodes[target][0], str(2 + k))
            elif change == "daemon":
                daemon_cpu = f"{100 + 50 * k}m"
            elif change == "reread-pod" and pods:
                kept.pop(pods[k % len(pods)][0]["metadata"]["name"], None)
        inputs = _read(nodes, pods, daemon_cpu)
        # The replay hands unchanged pods over as the same model objects.
        bound = [kept.setdefault(p.name, p) for p in inputs.bound_pods]
        fresh = prepare_nodes(inputs.nodes, bound, inputs.daemonsets)
        memoized = prepare_nodes(inputs.nodes, bound, inputs.daemonsets, memo)
        assert [_facts(p) for p in memoized] == [_facts(p) for p in fresh]


def test_an_unchanged_node_is_prepared_once():
    inputs = _read({"a": ({}, "4"), "b": ({}, "4")}, [(pod("p0", node_name="a", cpu="1"), None)], "100m")
    memo = PreparedMemo()
    first = prepare_nodes(inputs.nodes, inputs.bound_pods, inputs.daemonsets, memo)
    again = _read({"a": ({}, "4"), "b": ({}, "2")}, [(pod("p0", node_name="a", cpu="1"), None)], "100m")
    second = prepare_nodes(again.nodes, inputs.bound_pods, again.daemonsets, memo)
    assert second[0] is first[0]  # node a: same read, same pod objects
    assert second[1] is not first[1] and second[1].available["cpu"] == 2000 - 100  # node b was resized


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", "c"]), st.booleans()), max_size=10),
       st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans()), min_size=1, max_size=6),
       st.lists(st.integers(1, 5), min_size=10, max_size=10), st.integers(0, 1000))
def test_prepare_grouped_with_positions_in_the_same_order_plans_as_prepare_nodes(bound, pending, gaps, start):
    """prepare_grouped needs the bound pods' positions only in their order (they order the
    anti-affinity groups, ExistingNodes.anti, and a later round numbers its pods after them,
    planning.plan_rounds): numbers with gaps, as a replay's pass cache gives, plan as indices do."""
    from provisioner.models import NodeClassRef, NodePool
    from provisioner.planning import plan_rounds
    from provisioner.result import SimulationResult
    from tests.provisioner.prov_builders import karpenter_default_types
    objs = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}"},
                 allocatable={"cpu": "2", "memory": "8Gi", "pods": "20"}) for i in range(3)]
    for k, (i, app, anti) in enumerate(bound):
        extra = {"anti_affinity": [term("zone" if k % 2 else "kubernetes.io/hostname", labels={"app": app})]} if anti else {}
        objs.append(pod(f"b{k}", node_name=f"n{i}", cpu="100m", labels={"app": app}, **extra))
    for k, (app, anti) in enumerate(pending):
        extra = {"anti_affinity": [term("kubernetes.io/hostname", labels={"app": app})]} if anti else {}
        objs.append(pod(f"p{k}", cpu="300m", labels={"app": app}, **extra))
    inputs = load_objects(objs)
    by_node: dict = {}
    number = start
    for i, p in enumerate(inputs.bound_pods):
        number += gaps[i % len(gaps)]
        mine = by_node.setdefault(p.node_name, ([], []))
        mine[0].append(p)
        mine[1].append(number)
    pools = [(NodePool("default", NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default")), karpenter_default_types())]

    def plan(prepared):
        r = plan_rounds(SimulationResult(pods=len(inputs.pods)), prepared, list(inputs.pods), pools, inputs.daemonsets)
        return ([(c.instance_type, c.pods, c.round) for c in r.nodeclaims], sorted(r.existing.items()),
                [(u.pod, u.reason) for u in r.unschedulable])

    indexed = prepare_nodes(inputs.nodes, inputs.bound_pods, inputs.daemonsets)
    numbered = prepare_grouped(inputs.nodes, by_node, inputs.daemonsets)
    assert [[p.name for p in prep.bound] for prep in numbered] == [[p.name for p in prep.bound] for prep in indexed]
    assert ([(n.name, spec.key) for _, n, spec, _ in ExistingNodes(numbered).anti()]
            == [(n.name, spec.key) for _, n, spec, _ in ExistingNodes(indexed).anti()])
    assert plan(numbered) == plan(indexed)
