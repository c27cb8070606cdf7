"""Pod Events: one per pod uid and reason, across restarts and replicas, rate-limited."""
import hashlib

from provisioner.controller.batcher import TokenBucket
from provisioner.controller.controller import Controller, is_permanent
from provisioner.controller.events import REASON, EventRecorder, dedup_key, event_body, event_name
from provisioner.controller.kinds import POD, WATCHED
from provisioner.controller.metrics import Metrics
from provisioner.controller.reflector import Change, Reflector
from tests.provisioner.controller_fakes import FakeKube, cluster, pod, standard_objects

TOO_BIG = 'nodepool "default": no instance type has enough resources (requests cpu=1000, memory=1Gi, pods=1)'
AT_LIMIT = 'nodepool "default": all available instance types exceed limits for nodepool'


def unschedulable_plan(reasons: dict[str, str]):
    """A fake core that declares the given pods (`ns/name` -> reason) unschedulable."""
    def plan(objects):
        names = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects if o["kind"] == "Pod"}
        return {"nodeclaims": [], "unschedulable": [{"pod": p, "reason": r} for p, r in reasons.items() if p in names],
                "summary": {"price_usd_hour": 0.0}}
    return plan


def advisor(kube, plan, *, now=0.0, rate=100.0, burst=100, mode="advisor"):
    recorder = EventRecorder(kube, bucket=TokenBucket(rate, burst), instance="provisioner-0") if mode == "advisor" else None
    controller = Controller(plan=plan, metrics=Metrics(), recorder=recorder)
    for kind in WATCHED:
        Reflector(kind, kube, lambda m: controller.handle(m, now)).step()
    return controller


def test_event_name_is_stable_per_uid_and_reason():
    # Stable across processes: a fixed digest of uid and cause, not a per-run hash.
    assert event_name("web-0", "uid-1", TOO_BIG) == "web-0." + hashlib.sha256(
        "\0".join(dedup_key("uid-1", TOO_BIG)).encode()).hexdigest()[:16]
    assert event_name("web-0", "uid-1", TOO_BIG) == event_name("web-0", "uid-1", TOO_BIG.replace("1000", "2000"))
    assert event_name("web-0", "uid-1", TOO_BIG) != event_name("web-0", "uid-2", TOO_BIG)
    assert event_name("web-0", "uid-1", TOO_BIG) != event_name("web-0", "uid-1", AT_LIMIT)
    assert not event_name("x" * 300, "uid-1", TOO_BIG).endswith(".")
    assert len(event_name("x" * 300, "uid-1", TOO_BIG)) == 253


def test_event_body_targets_the_pod_with_reason_and_source():
    body = event_body(pod("web-0", namespace="shop"), TOO_BIG, 0.0, instance="provisioner-0")
    assert body["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "namespace": "shop",
                                      "uid": "uid-shop-web-0"}
    assert body["metadata"]["namespace"] == "shop"
    assert body["reason"] == REASON == "NoNodePoolCanSchedule"
    assert body["type"] == "Warning"
    assert body["message"] == f"no NodePool can schedule this pod: {TOO_BIG}"
    assert body["source"] == {"component": "karpenter-platform-provisioner"}
    assert body["reportingComponent"] == "karpenter-platform.io/provisioner"
    assert body["firstTimestamp"] == body["lastTimestamp"] == "1970-01-01T00:00:00Z"
    assert body["count"] == 1


def test_event_message_is_cut_to_api_limit():
    body = event_body(pod("web-0"), "x" * 5000, 0.0, instance="i")
    assert len(body["message"]) == 1024 and body["message"].endswith("...")


def test_is_permanent_false_only_for_limit_reasons():
    assert is_permanent(TOO_BIG)
    assert not is_permanent(AT_LIMIT)
    assert not is_permanent('nodepool "a": did not tolerate taint gpu=true:NoSchedule; '
                            'nodepool "b": node limits have been exhausted for nodepool')


def test_advisor_records_one_event_per_unschedulable_pod():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"), pod("web-0"))
    controller = advisor(kube, unschedulable_plan({"default/big-0": TOO_BIG}))
    controller.tick(5.0)
    assert [body["involvedObject"]["name"] for body in kube.events.values()] == ["big-0"]
    assert controller.metrics.registry.get_sample_value("provisioner_events_total", {"result": "created"}) == 1


def test_advisor_does_not_repeat_event_on_next_batches():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    controller = advisor(kube, unschedulable_plan({"default/big-0": TOO_BIG}))
    controller.tick(5.0)
    for i in range(3):
        controller.handle(Change(POD, "ADDED", pod(f"other-{i}")), 10.0 + i * 20)
        controller.tick(15.0 + i * 20)
    assert kube.event_writes == [("create", event_name("big-0", "uid-default-big-0", TOO_BIG))]
    assert controller.metrics.registry.get_sample_value("provisioner_events_total", {"result": "deduplicated"}) == 3


def test_restarted_advisor_does_not_duplicate_event():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    plan = unschedulable_plan({"default/big-0": TOO_BIG})
    advisor(kube, plan).tick(5.0)
    restarted = advisor(kube, plan, now=100.0)  # a new process: empty memory, same API server
    restarted.tick(105.0)
    assert len(kube.events) == 1
    assert [write for write, _ in kube.event_writes] == ["create", "create"]  # the second got 409
    assert restarted.metrics.registry.get_sample_value("provisioner_events_total", {"result": "exists"}) == 1
    assert next(iter(kube.events.values()))["count"] == 1


def test_advisor_refreshes_event_of_long_pending_pod():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    controller = advisor(kube, unschedulable_plan({"default/big-0": TOO_BIG}))
    controller.tick(5.0)
    controller.tick(5.0 + 1800.0)  # the resync plan, 30 min later
    event = next(iter(kube.events.values()))
    assert event["count"] == 2
    assert event["lastTimestamp"] == "1970-01-01T00:30:05Z"
    assert event["firstTimestamp"] == "1970-01-01T00:00:05Z"


def test_advisor_recreates_event_expired_by_ttl():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    controller = advisor(kube, unschedulable_plan({"default/big-0": TOO_BIG}))
    controller.tick(5.0)
    kube.events.clear()  # the API server's event TTL removed it
    controller.tick(5.0 + 1800.0)
    assert [w for w, _ in kube.event_writes] == ["create", "patch", "create"]
    assert next(iter(kube.events.values()))["count"] == 2


def test_advisor_rate_limits_events_and_records_rest_later():
    pods = [pod(f"big-{i}") for i in range(10)]
    kube = cluster(FakeKube(), *standard_objects(), *pods)
    controller = advisor(kube, unschedulable_plan({f"default/big-{i}": TOO_BIG for i in range(10)}), rate=1.0, burst=4)
    controller.tick(5.0)
    assert len(kube.events) == 4
    assert controller.metrics.registry.get_sample_value("provisioner_events_total", {"result": "rate_limited"}) == 6
    controller.tick(5.0 + 300.0)  # resync: the bucket has refilled
    assert len(kube.events) == 8  # burst of 4 again
    assert len(kube.event_writes) == 8  # no duplicate attempt for the first four


def test_advisor_records_no_event_for_pod_waiting_for_limits():
    kube = cluster(FakeKube(), *standard_objects(), pod("web-0"))
    controller = advisor(kube, unschedulable_plan({"default/web-0": AT_LIMIT}))
    controller.tick(5.0)
    assert kube.events == {}
    assert controller.metrics.registry.get_sample_value("provisioner_unschedulable_pods", {"reason": AT_LIMIT}) == 1


def test_metrics_only_mode_writes_nothing():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    controller = advisor(kube, unschedulable_plan({"default/big-0": TOO_BIG}), mode="metrics-only")
    controller.tick(5.0)
    assert kube.event_writes == []
    assert controller.metrics.registry.get_sample_value(
        "provisioner_unschedulable_pods",
        {"reason": 'nodepool "default": no instance type has enough resources (requests cpu=N, memory=NGi, pods=N)'}) == 1


def test_event_for_new_reason_of_same_pod_is_separate():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    reasons = {"default/big-0": TOO_BIG}
    controller = advisor(kube, unschedulable_plan(reasons))
    controller.tick(5.0)
    reasons["default/big-0"] = 'nodepool "default": did not tolerate taint gpu=true:NoSchedule'
    controller.handle(Change(POD, "MODIFIED", pod("big-0", rv="2")), 6.0)
    controller.tick(8.0)
    assert len(kube.events) == 2
    assert controller.recorder.remembered() == 1  # the old reason is forgotten; its event stays


def test_reason_differing_only_in_figures_is_one_event():
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    reasons = {"default/big-0": 'nodepool "default": no instance type has enough resources (requests cpu=1000)'}
    controller = advisor(kube, unschedulable_plan(reasons))
    controller.tick(5.0)
    reasons["default/big-0"] = 'nodepool "default": no instance type has enough resources (requests cpu=1200)'
    controller.handle(Change(POD, "MODIFIED", pod("big-0", rv="2")), 6.0)
    controller.tick(8.0)
    assert len(kube.events) == 1
    assert controller.metrics.registry.get_sample_value("provisioner_events_total", {"result": "deduplicated"}) == 1


def test_reason_whose_figures_and_details_change_as_nodes_appear_is_one_event_also_after_restart():
    """Issue 12: when 500 nodes appear, the reason text changes (figures, details, clause order)
    but not its cause; neither the next batch nor a restarted advisor adds an Event."""
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0"))
    reasons = {"default/big-0": 'nodepool "a": no instance type has enough resources (requests cpu=96, 3 nodes); '
                                'nodepool "b": did not tolerate taint gpu=true:NoSchedule'}
    controller = advisor(kube, unschedulable_plan(reasons))
    controller.tick(5.0)
    reasons["default/big-0"] = ('nodepool "b": did not tolerate taint gpu=true:NoSchedule; '
                                'nodepool "a": no instance type has enough resources (requests cpu=128, 500 nodes), '
                                'largest offers 64')
    controller.handle(Change(POD, "MODIFIED", pod("big-0", rv="2")), 6.0)
    controller.tick(8.0)
    assert len(kube.events) == 1
    restarted = advisor(kube, unschedulable_plan(reasons), now=9.0)
    restarted.tick(12.0)
    assert len(kube.events) == 1
    assert restarted.metrics.registry.get_sample_value("provisioner_events_total", {"result": "exists"}) == 1
