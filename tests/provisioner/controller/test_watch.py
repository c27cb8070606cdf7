"""List + watch: paging, 410 recovery, API errors with backoff, malformed objects."""
from provisioner.controller.batcher import Backoff
from provisioner.controller.controller import Controller
from provisioner.controller.kinds import NODE, NODEPOOL, POD, WATCHED
from provisioner.controller.kube import ApiError
from provisioner.controller.metrics import Metrics
from provisioner.controller.reflector import Change, Failure, Reflector, Replace
from tests.provisioner.controller_fakes import FakeKube, cluster, gone, node, nodepool, pod, standard_objects


def collect(kube, kind, **options):
    messages = []
    return Reflector(kind, kube, messages.append, **options), messages


def make_controller(kube, plan=None, validate=None):
    controller = Controller(plan=plan or (lambda objects: {"nodeclaims": [], "unschedulable": [], "summary": {}}),
                            metrics=Metrics(), recorder=None, validate=validate)
    reflectors = {k.kind: Reflector(k, kube, lambda m: controller.handle(m, 0.0)) for k in WATCHED}
    for reflector in reflectors.values():
        reflector.step()
    return controller, reflectors


def test_reflector_lists_every_page_into_one_replace():
    kube = cluster(FakeKube(page_size_cap=2), *[pod(f"p-{i}") for i in range(5)])
    reflector, messages = collect(kube, POD)
    assert reflector.step() == 0.0
    assert [type(m) for m in messages] == [Replace]
    assert [i["metadata"]["name"] for i in messages[0].items] == [f"p-{i}" for i in range(5)]
    assert [c[2] for c in kube.calls] == [None, "2", "4"]
    assert reflector.resource_version == "1000"


def test_reflector_watches_from_list_version_and_follows_events():
    kube = cluster(FakeKube(), pod("p-0"))
    kube.streams["Pod"].append([
        {"type": "ADDED", "object": pod("p-1", rv="1001")},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "1005"}}},
    ])
    reflector, messages = collect(kube, POD)
    reflector.step()
    reflector.step()
    assert kube.calls[-1] == ("watch", "Pod", "1000")
    assert [(type(m).__name__, getattr(m, "type", None)) for m in messages] == [("Replace", None), ("Change", "ADDED")]
    assert reflector.resource_version == "1005"  # bookmarks move the version on without an event


def test_reflector_relists_after_410_from_watch():
    kube = cluster(FakeKube(), pod("p-0"))
    kube.streams["Pod"].append([{"type": "ADDED", "object": pod("p-1", rv="1001")}, gone()])
    reflector, messages = collect(kube, POD)
    reflector.step()
    assert reflector.step() == 0.0  # relist at once, no backoff
    assert reflector.resource_version is None
    assert isinstance(messages[-1], Failure) and messages[-1].status == 410
    reflector.step()
    assert [c[0] for c in kube.calls] == ["list", "watch", "list"]
    assert isinstance(messages[-1], Replace)


def test_reflector_backs_off_on_api_errors_then_recovers():
    kube = cluster(FakeKube(), node("n-1"))
    kube.list_failures["Node"].extend([ApiError(500, "etcd timeout"), ApiError(0, "connection refused"),
                                       ApiError(429, "too many requests")])
    reflector, messages = collect(kube, NODE, backoff=Backoff(base=1.0, cap=30.0))
    assert [reflector.step() for _ in range(3)] == [1.0, 2.0, 4.0]
    assert reflector.step() == 0.0
    assert [m.status for m in messages if isinstance(m, Failure)] == [500, 0, 429]
    assert isinstance(messages[-1], Replace)
    assert reflector.backoff.failures == 0


def test_reflector_pauses_after_empty_watch_stream():
    kube = cluster(FakeKube(), node("n-1"))
    reflector, _ = collect(kube, NODE, quiet_pause=1.0)
    reflector.step()
    assert reflector.step() == 1.0  # the stream closed with nothing in it


def test_controller_relist_after_410_drops_objects_deleted_meanwhile():
    kube = cluster(FakeKube(), *standard_objects(), pod("p-0"), pod("p-1"))
    controller, reflectors = make_controller(kube)
    kube.objects["Pod"] = [o for o in kube.objects["Pod"] if o["metadata"]["name"] != "p-1"]
    kube.streams["Pod"].append(gone())
    reflectors["Pod"].step()
    reflectors["Pod"].step()
    assert sorted(p["metadata"]["name"] for p in controller.cache.items("Pod")) == ["p-0"]
    assert controller.pending == {"uid-default-p-0"}
    assert controller.metrics.registry.get_sample_value(
        "provisioner_api_failures_total", {"kind": "Pod", "operation": "watch", "code": "410"}) == 1


def test_controller_skips_and_counts_malformed_objects():
    broken = [
        "not an object",
        {"metadata": {"name": "no-uid", "namespace": "default"}},
        {"metadata": "nope"},
        {"metadata": {"name": "spec-list", "uid": "u2", "namespace": "default"}, "spec": ["x"]},
    ]
    kube = cluster(FakeKube(), *standard_objects(), pod("good"))
    kube.objects["Pod"].extend(broken)
    controller, _ = make_controller(kube)
    controller.handle(Change(POD, "ADDED", {"kind": "Node", "metadata": {"name": "wrong-kind", "uid": "u1"}}), 1.0)
    controller.handle(Change(POD, "ADDED", None), 1.0)
    assert [p["metadata"]["name"] for p in controller.cache.items("Pod")] == ["good"]
    assert controller.metrics.registry.get_sample_value("provisioner_malformed_objects_total", {"kind": "Pod"}) == 6
    assert controller.ready


def test_controller_skips_objects_the_core_rejects_and_drops_stale_version():
    def validate(obj):
        from provisioner.errors import InputError
        if obj["kind"] == "NodePool" and obj["spec"].get("limits") == {"cpu": "lots"}:
            raise InputError("not a quantity", obj=f'NodePool "{obj["metadata"]["name"]}"', path="spec.limits.cpu")
    kube = cluster(FakeKube(), *standard_objects())
    controller, _ = make_controller(kube, validate=validate)
    assert controller.cache.count("NodePool") == 1
    controller.handle(Change(NODEPOOL, "MODIFIED", nodepool(limits={"cpu": "lots"}, rv="2")), 1.0)
    assert controller.cache.count("NodePool") == 0  # the old version is no longer the NodePool's truth
    assert controller.metrics.registry.get_sample_value("provisioner_malformed_objects_total", {"kind": "NodePool"}) == 1


def test_controller_counts_unknown_watch_event_types():
    kube = cluster(FakeKube(), *standard_objects())
    kube.streams["Node"].append([{"type": "SURPRISE", "object": node("n-2")}, {"type": "ADDED", "object": node("n-3")}])
    controller, reflectors = make_controller(kube)
    reflectors["Node"].step()
    assert sorted(n["metadata"]["name"] for n in controller.cache.items("Node")) == ["n-3", "node-a"]
    assert controller.metrics.registry.get_sample_value("provisioner_malformed_objects_total", {"kind": "Node"}) == 1


def test_controller_plan_leaves_out_object_the_core_rejects():
    from provisioner.errors import InputError

    seen = []

    def plan(objects):
        names = [o["metadata"]["name"] for o in objects]
        seen.append(names)
        if "node-bad" in names:
            raise InputError("status.allocatable: missing", obj='Node "node-bad"')
        return {"nodeclaims": [], "unschedulable": [], "summary": {"price_usd_hour": 0}}

    kube = cluster(FakeKube(), *standard_objects(), node("node-bad"), pod("p-0"))
    controller, _ = make_controller(kube, plan=plan)
    controller.tick(5.0)
    assert len(seen) == 2 and "node-bad" not in seen[1]
    assert controller.metrics.registry.get_sample_value("provisioner_plans_total", {"result": "ok"}) == 1


def test_controller_survives_failing_plan():
    def plan(objects):
        raise RuntimeError("core bug")
    kube = cluster(FakeKube(), *standard_objects(), pod("p-0"))
    controller, _ = make_controller(kube, plan=plan)
    assert controller.tick(5.0)
    assert controller.metrics.registry.get_sample_value("provisioner_plans_total", {"result": "error"}) == 1
    controller.handle(Change(POD, "ADDED", pod("p-1")), 6.0)
    assert controller.tick(8.0)  # still planning later batches


def test_controller_ignores_replayed_event_with_same_version():
    kube = cluster(FakeKube(), *standard_objects())
    controller, _ = make_controller(kube)
    controller.tick(5.0)
    controller.handle(Change(NODE, "MODIFIED", node("node-a")), 6.0)  # same resourceVersion "1"
    assert not controller.batcher.open


def test_cache_strips_managed_fields_and_sets_kind():
    kube = cluster(FakeKube(), *standard_objects(), pod("p-0"))
    controller, _ = make_controller(kube)
    cached = controller.cache.items("Pod")[0]
    assert cached["kind"] == "Pod" and cached["apiVersion"] == "v1"
    assert "managedFields" not in cached["metadata"]


def test_reflector_treats_unserved_optional_kind_as_empty():
    from provisioner.controller.kinds import NODEOVERLAY
    kube = FakeKube()
    kube.list_failures["NodeOverlay"].append(ApiError(404, "the server could not find the requested resource"))
    reflector, messages = collect(kube, NODEOVERLAY, absent_pause=300.0)
    assert reflector.step() == 300.0
    assert [(type(m).__name__, m.items) for m in messages] == [("Replace", [])]
    assert reflector.resource_version is None  # listed again after the pause
    assert reflector.step() == 0.0 and reflector.resource_version == "1000"


def test_reflector_backs_off_on_404_for_required_kind():
    kube = FakeKube()
    kube.list_failures["NodePool"].append(ApiError(404, "the server could not find the requested resource"))
    reflector, messages = collect(kube, NODEPOOL)
    assert 1.0 <= reflector.step() <= 1.5  # 1 s, stretched by up to half by the default jitter
    assert [type(m).__name__ for m in messages] == ["Failure"]


class _EndlessPages(FakeKube):
    """A list whose `continue` never ends: the same token every time, or a new one every time."""

    def __init__(self, same_token: bool):
        super().__init__()
        self.same_token = same_token

    def list(self, kind, *, limit, continue_token):
        self.calls.append(("list", kind.kind, continue_token))
        page = len(self.calls)
        if page > 2000:  # the old reflector paged on for ever: fail instead of filling the memory
            raise AssertionError("listed 2000 pages of a list that never ends")
        token = "abc" if self.same_token else f"t-{page}"
        return {"items": [pod(f"p-{page}-{i}") for i in range(limit)], "metadata": {"resourceVersion": "1", "continue": token}}


def test_a_continue_token_that_comes_back_stops_the_list_and_backs_off():
    """A server that hands the same continue token back grew the advisor by 190 MB in 20 s; the
    repeated token now ends the list at the second page, reported, with a backoff."""
    kube = _EndlessPages(same_token=True)
    reflector, messages = collect(kube, POD, page_size=10, backoff=Backoff(base=1.0, cap=30.0))
    assert reflector.step() == 1.0
    assert len(kube.calls) == 2
    assert [type(m) for m in messages] == [Failure]
    assert messages[0].operation == "list" and "continue token 'abc' came back after 2 pages" in messages[0].message
    assert reflector.step() == 2.0  # and again later, doubling


def test_a_list_that_pages_forever_stops_at_the_page_ceiling():
    kube = _EndlessPages(same_token=False)
    reflector, messages = collect(kube, POD, page_size=10, max_pages=50, backoff=Backoff(base=1.0, cap=30.0))
    assert reflector.step() == 1.0
    assert len(kube.calls) == 50
    assert "still paging after 50 pages and 500 items" in messages[0].message
    reflector, messages = collect(_EndlessPages(same_token=False), POD, page_size=10, max_items=95)
    reflector.step()
    assert "still paging after 10 pages and 100 items" in messages[0].message


class _NoVersion(FakeKube):
    def list(self, kind, *, limit, continue_token):
        page = super().list(kind, limit=limit, continue_token=continue_token)
        page["metadata"].pop("resourceVersion")
        return page


def test_a_list_without_resource_version_is_used_then_backed_off_not_relisted_at_once():
    """Without a resourceVersion there is nothing to watch from; the reflector listed again at
    once, 23 times a second. The objects are still delivered, and the next list waits, doubling
    with jitter up to the cap (client-go's reflector backs off its relists the same way)."""
    kube = cluster(_NoVersion(), pod("p-0"))
    reflector, messages = collect(kube, POD, backoff=Backoff(base=1.0, cap=8.0, jitter=0.5, rng=lambda: 1.0))
    delays = [reflector.step() for _ in range(6)]
    assert delays == [1.5, 3.0, 6.0, 8.0, 8.0, 8.0]
    assert [type(m) for m in messages[:2]] == [Replace, Failure]
    assert "no metadata.resourceVersion" in messages[1].message


def test_backoff_jitter_stays_within_its_bounds():
    draws = iter([0.0, 1.0, 0.5])
    backoff = Backoff(base=2.0, cap=100.0, jitter=1.0, rng=lambda: next(draws))
    assert [backoff.failure() for _ in range(3)] == [2.0, 8.0, 12.0]
    assert Backoff(base=1.0, cap=60.0, jitter=1.0, _failures=5000).failure() == 60.0


def test_controller_skips_a_nodepool_the_validator_refuses_with_the_real_core(caplog):
    """An invalid object from the API (here a NodePool whose kubelet block v1 moved to the
    EC2NodeClass) is skipped, counted and logged in the validator's words; planning goes on."""
    from provisioner.controller.core import validate
    from kubefacts.validation import validate as judge

    kube = cluster(FakeKube(), *standard_objects())
    controller, _ = make_controller(kube, validate=validate)
    assert controller.cache.count("NodePool") == 1
    stale = nodepool(rv="2")
    stale["spec"]["template"]["spec"]["kubelet"] = {"maxPods": 10}
    with caplog.at_level("WARNING"):
        controller.handle(Change(NODEPOOL, "MODIFIED", stale), 1.0)
    assert controller.cache.count("NodePool") == 0
    assert controller.metrics.registry.get_sample_value("provisioner_malformed_objects_total", {"kind": "NodePool"}) == 1
    assert judge(stale)[0].words in caplog.text
    assert controller.ready
