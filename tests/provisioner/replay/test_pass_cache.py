"""The replay's pass cache (provisioner/replay/disruption.py PassCache) changes no answer: a pass
reads the pods' cached models instead of their objects, and is skipped only when everything it
reads equals what the last pass that found nothing read (upstream's disruption controller acts
on state changes, pkg/controllers/disruption/controller.go; scheduled budgets per
Budget.IsActive, pkg/apis/v1/nodepool.go)."""
import dataclasses
from datetime import timedelta
from unittest import mock

from hypothesis import HealthCheck, example, given, settings, strategies as st

from kubefacts import labels as L
from provisioner.errors import InputError
from provisioner.replay import cluster as replay_cluster, disruption, pass_cache
from provisioner.replay.disruption import PassCache, cluster_objects, disruption_pass
from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace
from provisioner.memo import same
from provisioner.state.cluster import group_pods
from provisioner.state.reader import load_cluster

from tests.provisioner.replay.replay_builders import random_event, deployment, nodeclass, nodepool, pdb

NAMES = st.sampled_from(["web", "api", "etl"])
EVENTS = st.lists(st.tuples(st.sampled_from(["deploy", "job", "cron", "pdb", "scale", "delete", "interrupt"]), NAMES,
                            st.integers(0, 6), st.integers(0, 7200), st.integers(1, 3600)), max_size=8)
POOLS = st.sampled_from([
    [nodeclass(), nodepool()],
    [nodeclass(), nodepool(policy="WhenEmpty", after="0s")],
    # a budget that opens and closes every 20 minutes: passes at its boundaries see other windows
    [nodeclass(), nodepool(after="1m", budgets=[{"nodes": "0", "schedule": "*/20 * * * *", "duration": "10m"}])],
])
# cel-python raises the recursion limit when it first compiles a rule: do that before hypothesis runs.
load_cluster([nodeclass(), nodepool()])


def _run(objects, trace, cache):
    r = Replay(objects, None, trace, Options(until=3 * 3600.0, seed=1))
    r.pass_cache = cache
    return r.run(), r


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(POOLS, EVENTS)
@example(
    objects=[{'apiVersion': 'karpenter.k8s.aws/v1',
      'kind': 'EC2NodeClass',
      'metadata': {'name': 'default'},
      'spec': {'amiSelectorTerms': [{'alias': 'al2023@latest'}],
       'subnetSelectorTerms': [{'tags': {'karpenter.sh/discovery': 'test'}}],
       'securityGroupSelectorTerms': [{'tags': {'karpenter.sh/discovery': 'test'}}],
       'role': 'KarpenterNodeRole-test'}},
     {'apiVersion': 'karpenter.sh/v1',
      'kind': 'NodePool',
      'metadata': {'name': 'default'},
      'spec': {'template': {'metadata': {'labels': {}},
        'spec': {'nodeClassRef': {'group': 'karpenter.k8s.aws',
          'kind': 'EC2NodeClass',
          'name': 'default'},
         'requirements': [{'key': 'karpenter.sh/capacity-type',
           'operator': 'In',
           'values': ['on-demand']},
          {'key': 'karpenter.k8s.aws/instance-family',
           'operator': 'In',
           'values': ['m5']}]}},
       'disruption': {'consolidationPolicy': 'WhenEmptyOrUnderutilized',
        'consolidateAfter': '30s'}}}],
    items=[('deploy', 'web', 0, 0, 1),
     ('deploy', 'web', 0, 0, 1),
     ('deploy', 'web', 0, 0, 1),
     ('deploy', 'api', 3, 44, 1),
     ('job', 'api', 0, 62, 1),
     ('job', 'api', 1, 0, 1),
     ('cron', 'web', 0, 0, 1)],
)
def test_pass_cache_gives_the_same_replay_as_reading_every_pass_afresh(objects, items):
    items = sorted(items, key=lambda i: i[3])
    trace = parse_trace({"events": [random_event(*i) for i in items]}, "t.yaml")
    try:
        plain, _ = _run(objects, trace, None)
    except InputError:
        return
    cached, r = _run(objects, trace, PassCache())
    unskipped, _ = _run(objects, trace, PassCache(skip=False))
    assert cached == plain
    assert unskipped == plain


def _quiet_replay():
    """A replay left with one node of three pods under a WhenEmpty pool: a pass finds nothing."""
    trace = parse_trace({"events": [{"at": "0s", "apply": deployment("web", replicas=3, cpu="500m")}]}, "t.yaml")
    r = Replay([nodeclass(), nodepool(policy="WhenEmpty", after="0s",
                                      budgets=[{"nodes": "0", "schedule": "0 12 * * *", "duration": "1h"},
                                               {"nodes": "10%"}])], None, trace, Options(until=600.0))
    r.run()
    return r


def _pass(r, cache, now=600.0):
    wall = (r.o.start + timedelta(seconds=now)).replace(tzinfo=None)
    return disruption_pass(r.cluster, r.pool_specs, list(r.pdbs.values()), r.drifted, now, wall, r.catalog,
                           r.o.region, r.o.zones, r.o.spot_discount, r.o.spot_to_spot,
                           [o for o, _ in r.karpenter] + r.daemonset_objs, cache=cache)


def test_pass_is_skipped_when_nothing_it_reads_changed():
    r, cache = _quiet_replay(), PassCache()
    assert _pass(r, cache) is None and _pass(r, cache, now=660.0) is None
    assert (cache.passes, cache.skipped) == (1, 1)


def test_pass_runs_again_when_a_pod_leaves_its_node():
    r, cache = _quiet_replay(), PassCache()
    assert _pass(r, cache) is None
    pod = next(p for p in r.cluster.pods.values() if p.node is not None and not p.daemon)
    r.cluster.remove_pod(pod, 600.0)
    _pass(r, cache)
    assert (cache.passes, cache.skipped) == (2, 0)


def test_pass_runs_again_when_a_node_is_being_deleted():
    r, cache = _quiet_replay(), PassCache()
    assert _pass(r, cache) is None
    next(iter(r.cluster.nodes.values())).deleting = True
    _pass(r, cache)
    assert cache.skipped == 0  # read afresh (here: no candidate is left, so nothing to read)


def test_pass_runs_again_when_a_scheduled_budget_window_opens():
    r, cache = _quiet_replay(), PassCache()
    start = r.o.start.replace(tzinfo=None)
    noon = (start.replace(hour=12, minute=0, second=0, microsecond=0) - start).total_seconds() % 86400 + 60
    assert _pass(r, cache) is None
    _pass(r, cache, now=noon)  # 12:01, inside the 0-node window
    assert (cache.passes, cache.skipped) == (2, 0)


# -- the state a pass reads, from the cache, equals load_cluster's read of all its objects ------------

_MEMO = {"_hash", "_text"}  # caches a model fills in when first asked (Requirement)
_KEPT = {"node_pods"}  # the pods as the cache keeps them grouped: node_pods_agree checks them


def node_pods_agree(state):
    """Cluster.node_pods as the cache kept them are what state.cluster.group_pods finds in the
    state afresh: the very same objects per node, and numbers in the order of Inputs.bound_pods."""
    fresh = group_pods(state)
    assert state.node_pods.keys() == fresh.keys()
    for name, group in fresh.items():
        kept = state.node_pods[name]
        for part in ("infos", "models", "bound"):
            assert same(getattr(kept, part), getattr(group, part)), (name, part)
    numbered = sorted((n, i) for g in state.node_pods.values() for n, i in zip(g.order, map(id, g.bound)))
    assert len({n for n, _ in numbered}) == len(numbered)
    assert [i for _, i in numbered] == list(map(id, state.inputs.bound_pods))


def state_dump(x, depth=0):
    """Every value of a state.Cluster, as comparable tuples (the models compare by identity)."""
    assert depth < 40
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple((f.name, state_dump(getattr(x, f.name), depth + 1))
                                        for f in dataclasses.fields(x) if f.name not in _MEMO | _KEPT))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(state_dump(v, depth + 1) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((state_dump(k, depth + 1), state_dump(v, depth + 1)) for k, v in x.items()))
    if isinstance(x, (set, frozenset)):
        return (type(x).__name__, tuple(sorted(repr(state_dump(v, depth + 1)) for v in x)))
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return (type(x).__name__, state_dump(vars(x), depth + 1))
    if hasattr(x, "__slots__"):
        return (type(x).__name__, tuple((s, state_dump(getattr(x, s, None), depth + 1)) for s in x.__slots__
                                        if s not in _MEMO))
    return x


def _afresh(r, now, drifted=None):
    wall = (r.o.start + timedelta(seconds=now)).replace(tzinfo=None)
    objects = [o for o, _ in r.karpenter] + r.daemonset_objs
    return wall, objects, load_cluster(objects + cluster_objects(r.cluster, r.pool_specs, list(r.pdbs.values()),
                                                                 r.drifted if drifted is None else drifted, now, wall),
                                       judged=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(POOLS, EVENTS)
def test_every_pass_reads_from_the_cache_the_state_load_cluster_reads_from_the_objects(objects, items):
    items = sorted(items, key=lambda i: i[3])
    trace = parse_trace({"events": [random_event(*i) for i in items]}, "t.yaml")
    try:
        r = Replay(objects, None, trace, Options(until=3 * 3600.0, seed=1))
    except InputError:
        return
    r.pass_cache = PassCache(skip=False)
    checked = []
    real = pass_cache.pass_view

    def view(cluster, given, pools, pdbs, drifted, now, wall, cache):
        v = real(cluster, given, pools, pdbs, drifted, now, wall, cache)
        if v is not None:
            state = v.state()
            if state is not None:
                fresh = load_cluster(given + cluster_objects(cluster, pools, pdbs, drifted, now, wall), judged=True)
                assert state_dump(state) == state_dump(fresh)
                node_pods_agree(state)
                checked.append(now)
        return v

    with mock.patch.object(disruption, "pass_view", view):
        try:
            r.run()
        except InputError:
            return
    assert len(checked) == r.pass_cache.passes  # every pass read the state from the cache


def _world(with_pdb=True):
    """A replay left with four m5.large nodes holding the pods of two Deployments (one with a PDB
    unless `with_pdb` is False), a pod no node fits pending, and a scheduled budget."""
    trace = parse_trace({"events": [
        {"at": "0s", "apply": deployment("web", replicas=5, cpu="500m")},
        {"at": "0s", "apply": deployment("api", replicas=3, cpu="1")},
        {"at": "0s", "apply": deployment("big", replicas=1, cpu="64")}]
        + ([{"at": "0s", "apply": pdb("web", app="web", max_unavailable=1)}] if with_pdb else [])}, "t.yaml")
    r = Replay([nodeclass(), nodepool(policy="WhenEmptyOrUnderutilized", after="1m", types=["m5.large"],
                                      budgets=[{"nodes": "0", "schedule": "0 12 * * *", "duration": "1h"},
                                               {"nodes": "10%"}])], None, trace, Options(until=600.0))
    r.run()
    return r


CHANGES = st.lists(st.tuples(st.sampled_from(["bind", "unbind", "remove", "recreate", "relabel", "new", "daemon", "label",
                                              "annotate", "ready", "delete", "disrupt", "event", "drift", "terminate",
                                              "launch", "time", "other-reader", "overflow"]),
                             st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=25)


def change_cluster(r, change, i, j, now, drifted):
    """One change to the replayed cluster between passes (CHANGES); the new time."""
    c = r.cluster
    pods, nodes = list(c.pods.values()), sorted(c.nodes.values(), key=lambda n: n.name)
    pod = pods[i % len(pods)] if pods else None
    node = nodes[j % len(nodes)] if nodes else None
    if change == "bind" and pod is not None and node is not None:
        c.bind(pod, node.name, now)
    elif change == "unbind" and pod is not None:  # its controller recreated it, pending
        c.remove_pod(pod, now)
        c.add_pod(dataclasses.replace(pod, node=None, nominated=None))
    elif change == "remove" and pod is not None:
        c.remove_pod(pod, now)
    elif change == "recreate" and pod is not None:  # the same object again, under its name
        c.add_pod(dataclasses.replace(pod))
    elif change == "relabel" and pod is not None:  # another object under its name
        c.add_pod(dataclasses.replace(pod, labels={"app": f"x{j % 3}"}, annotations={"n": str(i)}))
    elif change == "new" and pod is not None:
        c.add_pod(dataclasses.replace(pod, name=f"default/extra-{i}-{j}", labels={"app": f"x{j % 3}"}, node=None))
    elif change == "daemon" and pod is not None:  # a pending pod Karpenter does not provision for
        c.add_pod(dataclasses.replace(pod, name=f"default/agent-{i}", daemon=True, node=None))
    elif change == "label" and node is not None:
        node.labels[f"team-{i % 2}"] = str(j)
    elif change == "annotate" and node is not None:
        node.annotations["karpenter.sh/do-not-disrupt"] = "true" if j % 2 else "false"
    elif change == "ready" and node is not None:
        node.ready_at = None if node.ready else now
    elif change == "delete" and node is not None:
        node.deleting = not node.deleting
    elif change == "disrupt" and node is not None:
        node.disrupting = not node.disrupting
    elif change == "event" and node is not None:
        node.last_pod_event = now - 10 * j
    elif change == "drift" and node is not None:
        drifted ^= {node.name}
    elif change == "terminate" and node is not None:
        c.terminate(node, now)
    elif change == "launch":
        c.launch("default", "m5.large", "on-demand", "us-east-1a", 0.096, {L.INSTANCE_TYPE: "m5.large"},
                 {"cpu": 1930, "memory": 7_000_000_000, "pods": 29}, now, c.fresh_name("default"))
    elif change == "time":
        now += 30 * (j + 1)
    elif change == "other-reader" and pod is not None:  # takes the log of changes
        c.remove_pod(pod, now)
        c.add_pod(dataclasses.replace(pod, name=f"default/moved-{i}", node=None))
        pass_cache.pass_view(c, *_inputs(r, now, drifted), PassCache())
    elif change == "overflow":
        c.pod_log = None  # Cluster gives the log up past LOG_LIMIT
    return now


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHANGES)
def test_cached_reads_follow_every_change_to_the_replayed_cluster(changes):
    """A pass's state from the cache equals load_cluster's read of all the objects after any
    change between passes (pods bound, removed, recreated under their name as they were or not; a node's labels and
    annotations changed in place, its readiness, deletion, last pod event, drift; nodes launched
    and terminated, leaving pods on a missing node; time; another reader taking Cluster.pod_log, or
    the log given up), and two passes with equal keys read equal states (so a skipped pass is
    one that would have read what the last one read)."""
    r = _world()
    c = r.cluster
    cache, now, seen = PassCache(), 600.0, {}
    drifted = set()
    for change, i, j in [("time", 0, 0)] + changes:
        now = change_cluster(r, change, i, j, now, drifted)
        view = pass_cache.pass_view(c, *_inputs(r, now, drifted), cache)
        wall, objects, fresh = _afresh(r, now, drifted)
        assert view is not None
        state = view.state()
        assert state is not None
        expected = state_dump(fresh)
        assert state_dump(state) == expected
        node_pods_agree(state)
        key = repr(view.key)
        assert seen.setdefault(key, expected) == expected


def _inputs(r, now, drifted):
    wall = (r.o.start + timedelta(seconds=now)).replace(tzinfo=None)
    return [o for o, _ in r.karpenter] + r.daemonset_objs, r.pool_specs, list(r.pdbs.values()), drifted, now, wall


def test_a_long_pod_log_is_given_up_and_the_pods_read_afresh(monkeypatch):
    monkeypatch.setattr(replay_cluster, "LOG_LIMIT", 3)
    r = _world()
    c, cache = r.cluster, PassCache()
    assert pass_cache.pass_view(c, *_inputs(r, 600.0, set()), cache) is not None
    pods = [p for p in c.pods.values() if p.node is not None]
    for pod in pods:
        c.remove_pod(pod, 600.0)
    assert c.pod_log is None
    view = pass_cache.pass_view(c, *_inputs(r, 600.0, set()), cache)
    assert state_dump(view.state()) == state_dump(_afresh(r, 600.0, set())[2])
    node_pods_agree(view.state())
    assert view.state().inputs.bound_pods == []
