"""Batch windows, token bucket, backoff, and when the controller plans."""
from provisioner.controller.batcher import Backoff, Batcher, TokenBucket
from provisioner.controller.controller import Controller
from provisioner.controller.kinds import POD, WATCHED
from provisioner.controller.metrics import Metrics
from provisioner.controller.reflector import Change, Reflector
from tests.provisioner.controller_fakes import FakeKube, cluster, pod, standard_objects


class RecordingPlan:
    """A fake core: remembers the pending pods of every call; prices one NodeClaim per pod."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, objects):
        pods = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects
                if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
        self.calls.append(pods)
        claims = [{"nodepool": "default", "price_usd_hour": 0.1, "pods": [p]} for p in pods]
        return {"nodeclaims": claims, "unschedulable": [], "summary": {"price_usd_hour": round(0.1 * len(pods), 6)}}


def synced(kube, plan, now=0.0, **options):
    controller = Controller(plan=plan, metrics=Metrics(), recorder=None, **options)
    for kind in WATCHED:
        Reflector(kind, kube, lambda m: controller.handle(m, now)).step()
    return controller


def test_batcher_closes_after_idle_window():
    batcher = Batcher(idle=1.0, maximum=10.0)
    batcher.trigger(0.0)
    batcher.trigger(0.5)
    assert batcher.deadline() == 1.5
    assert not batcher.due(1.4)
    assert batcher.due(1.5)


def test_batcher_closes_at_max_window_under_steady_triggers():
    batcher = Batcher(idle=1.0, maximum=10.0)
    for tick in range(20):
        batcher.trigger(tick * 0.5)  # never idle for a whole second
    assert batcher.deadline() == 10.0


def test_batcher_closed_has_no_deadline():
    batcher = Batcher()
    batcher.trigger(3.0)
    batcher.close()
    assert batcher.deadline() is None and not batcher.due(100.0)


def test_token_bucket_allows_burst_then_rate():
    bucket = TokenBucket(rate=2.0, burst=3)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.5) is True  # one token back after 1/rate seconds
    assert bucket.take(0.5) is False


def test_token_bucket_ignores_clock_going_backwards():
    bucket = TokenBucket(rate=1.0, burst=1)
    assert bucket.take(10.0) is True
    assert bucket.take(5.0) is False


def test_backoff_doubles_up_to_cap_and_resets():
    backoff = Backoff(base=1.0, cap=5.0)
    assert [backoff.failure() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    backoff.success()
    assert backoff.failure() == 1.0


def test_controller_plans_burst_of_pending_pods_once():
    kube = cluster(FakeKube(), *standard_objects())
    plan = RecordingPlan()
    controller = synced(kube, plan)
    assert controller.tick(1.0)  # the initial list opens one batch; nothing pending, so no core call
    assert plan.calls == []
    for i in range(50):
        controller.handle(Change(POD, "ADDED", pod(f"web-{i}")), 10.0 + i * 0.01)
    assert not controller.tick(10.9)  # 0.41 s after the last pod: still inside the idle window
    assert controller.tick(11.5)
    assert [len(call) for call in plan.calls] == [50]


def test_controller_does_not_plan_before_every_kind_is_listed():
    kube = cluster(FakeKube(), *standard_objects(), pod("web-0"))
    plan = RecordingPlan()
    controller = Controller(plan=plan, metrics=Metrics(), recorder=None)
    for kind in WATCHED:
        if kind.kind != "NodePool":
            Reflector(kind, kube, lambda m: controller.handle(m, 0.0)).step()
    assert not controller.ready
    assert not controller.tick(60.0)
    assert plan.calls == []


def test_controller_ignores_changes_to_bound_pods_when_nothing_is_pending():
    kube = cluster(FakeKube(), *standard_objects())
    plan = RecordingPlan()
    controller = synced(kube, plan)
    controller.tick(5.0)
    controller.handle(Change(POD, "ADDED", pod("db-0", node="node-a")), 6.0)
    assert controller.wait(6.0) is None
    assert not controller.tick(30.0)
    assert plan.calls == []


def test_controller_plans_when_last_pending_pod_is_scheduled_and_zeroes_metrics():
    kube = cluster(FakeKube(), *standard_objects(), pod("web-0"))
    plan = RecordingPlan()
    controller = synced(kube, plan)
    controller.tick(5.0)
    registry = controller.metrics.registry
    assert registry.get_sample_value("provisioner_pending_pods") == 1
    assert registry.get_sample_value("provisioner_plan_hourly_price_usd") == 0.1
    controller.handle(Change(POD, "MODIFIED", pod("web-0", node="node-a", rv="2")), 6.0)
    assert controller.tick(7.0)
    assert registry.get_sample_value("provisioner_pending_pods") == 0
    assert registry.get_sample_value("provisioner_plan_hourly_price_usd") == 0
    assert registry.get_sample_value("provisioner_nodepool_projected_hourly_cost_usd", {"nodepool": "default"}) is None


def test_controller_replans_pending_pods_at_resync_interval():
    kube = cluster(FakeKube(), *standard_objects(), pod("web-0"))
    plan = RecordingPlan()
    controller = synced(kube, plan, resync=300.0)
    controller.tick(1.0)
    assert controller.wait(1.0) == 300.0
    assert not controller.tick(200.0)
    assert controller.tick(301.0)
    assert plan.calls == [["default/web-0"], ["default/web-0"]]


def test_controller_skips_preempting_daemonset_and_terminating_pods():
    preempting = pod("preempting")
    preempting["status"]["nominatedNodeName"] = "node-a"
    daemon = pod("agent-x", metadata_owner=None)
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent", "apiVersion": "apps/v1", "uid": "d"}]
    terminating = pod("old")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    not_marked = pod("fresh", pending=False)  # the scheduler has not looked at it yet
    kube = cluster(FakeKube(), *standard_objects(), preempting, daemon, terminating, not_marked, pod("web-0"))
    plan = RecordingPlan()
    controller = synced(kube, plan)
    controller.tick(5.0)
    assert plan.calls == [["default/web-0"]]


def test_controller_projects_cost_per_nodepool():
    def plan(objects):
        return {"nodeclaims": [{"nodepool": "web", "price_usd_hour": 0.2}, {"nodepool": "web", "price_usd_hour": 0.3},
                               {"nodepool": "batch", "price_usd_hour": 1.5}],
                "unschedulable": [], "summary": {"price_usd_hour": 2.0}}
    kube = cluster(FakeKube(), *standard_objects(), pod("web-0"))
    controller = synced(kube, plan)
    controller.tick(5.0)
    value = controller.metrics.registry.get_sample_value
    assert value("provisioner_nodepool_projected_hourly_cost_usd", {"nodepool": "web"}) == 0.5
    assert value("provisioner_nodepool_projected_hourly_cost_usd", {"nodepool": "batch"}) == 1.5
    assert value("provisioner_nodepool_planned_nodeclaims", {"nodepool": "web"}) == 2
    assert value("provisioner_plan_hourly_price_usd") == 2.0
    assert value("provisioner_plans_total", {"result": "ok"}) == 1
