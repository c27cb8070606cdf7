"""The replay's pass cache (provisioner/replay/disruption.py PassCache) changes no answer: a pass
reads the pods' cached models instead of their objects, and is skipped only when everything it
reads equals what the last pass that found nothing read (upstream's disruption controller acts
on state changes, pkg/controllers/disruption/controller.go; scheduled budgets per
Budget.IsActive, pkg/apis/v1/nodepool.go)."""
from datetime import timedelta

from hypothesis import HealthCheck, example, given, settings, strategies as st

from provisioner.errors import InputError
from provisioner.replay.disruption import PassCache, disruption_pass
from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import random_event, deployment, nodeclass, nodepool

NAMES = st.sampled_from(["web", "api", "etl"])



EVENTS = st.lists(st.tuples(st.sampled_from(["deploy", "job", "cron", "pdb", "scale", "delete", "interrupt"]), NAMES,
                            st.integers(0, 6), st.integers(0, 7200), st.integers(1, 3600)), max_size=8)
POOLS = st.sampled_from([
    [nodeclass(), nodepool()],
    [nodeclass(), nodepool(policy="WhenEmpty", after="0s")],
    # a budget that opens and closes every 20 minutes: passes at its boundaries see other windows
    [nodeclass(), nodepool(after="1m", budgets=[{"nodes": "0", "schedule": "*/20 * * * *", "duration": "10m"}])],
])


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
