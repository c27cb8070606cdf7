"""The advisor on the real scheduling core: validation, plans, catalogs, in-flight capacity."""
from datetime import datetime, timezone

import pytest

from provisioner.controller import core
from provisioner.controller.batcher import TokenBucket
from provisioner.controller.catalog import CatalogHolder, choose_catalog
from provisioner.controller.controller import Controller
from provisioner.controller.events import EventRecorder
from provisioner.controller.kinds import WATCHED
from provisioner.controller.metrics import Metrics
from provisioner.controller.pending import is_bound, is_unschedulable, plan_input
from provisioner.controller.reflector import Reflector
from provisioner.errors import InputError
from tests.provisioner.controller_fakes import FakeKube, cluster, node, nodeclass, nodepool, pod


def nodeclaim(name: str, *, node_name: str | None = None, launched: bool = True) -> dict:
    status: dict = {}
    if launched:
        status["providerID"] = f"aws:///us-east-1a/i-{name}"
        status["allocatable"] = {"cpu": "3920m", "memory": "14Gi", "pods": "58"}
        status["capacity"] = {"cpu": "4", "memory": "16Gi", "pods": "58"}
    if node_name:
        status["nodeName"] = node_name
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": f"uid-nc-{name}", "labels": {
                "karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "m5.xlarge",
                "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "on-demand"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, "requirements": [], "taints": [],
                     "startupTaints": [{"key": "odigos.io/needs-init", "effect": "NoSchedule"}]},
            "status": status}


def overlay() -> dict:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
            "metadata": {"name": "odigos", "uid": "uid-overlay-odigos"},
            "spec": {"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
                     "capacity": {"instrumentation.odigos.io/generic": "1024"}}}


def instrumented(name: str) -> dict:
    p = pod(name)
    resources = p["spec"]["containers"][0]["resources"]
    resources["requests"]["instrumentation.odigos.io/generic"] = "1"
    resources["limits"] = {"instrumentation.odigos.io/generic": "1"}
    return p


def test_validate_rejects_node_without_allocatable():
    broken = node("n-1")
    del broken["status"]["allocatable"]
    with pytest.raises(InputError, match="status.allocatable"):
        core.validate(broken)
    core.validate(node("n-2"))


def test_bundled_catalog_age_comes_from_its_build_date():
    catalog, as_of = core.load_bundled()
    assert len(catalog.types) > 1000
    assert as_of == datetime(2026, 11, 21, tzinfo=timezone.utc).timestamp()


def test_choose_catalog_falls_back_to_bundled_with_reason():
    def denied():
        raise PermissionError("AccessDeniedException: pricing:GetProducts")
    choice = choose_catalog(denied, lambda: ("BUNDLED", 1.0), now=50.0)
    assert (choice.catalog, choice.source, choice.as_of) == ("BUNDLED", "bundled", 1.0)
    assert choice.error == "PermissionError: AccessDeniedException: pricing:GetProducts"


def test_choose_catalog_prefers_live_and_stamps_it_now():
    choice = choose_catalog(lambda: ("LIVE", None), lambda: ("BUNDLED", 1.0), now=50.0)
    assert (choice.catalog, choice.source, choice.as_of, choice.error) == ("LIVE", "live", 50.0, None)


def test_catalog_holder_keeps_live_catalog_when_refresh_fails():
    answers = iter([("LIVE-1", None), RuntimeError("throttled")])

    def live():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer
    changes = []
    holder = CatalogHolder(live, lambda: ("BUNDLED", 1.0), on_change=changes.append)
    holder.refresh(10.0)
    holder.refresh(20.0)
    assert holder.current.catalog == "LIVE-1" and holder.current.source == "live"
    assert [c.source for c in changes] == ["live"]


def test_catalog_source_is_exported_as_metric():
    metrics = Metrics(clock=lambda: 100.0)
    holder = CatalogHolder(None, lambda: ("BUNDLED", 40.0),
                           on_change=lambda c: metrics.set_catalog(c.source, c.as_of))
    holder.refresh(100.0)
    assert metrics.registry.get_sample_value("provisioner_catalog_info", {"source": "bundled"}) == 1
    assert metrics.registry.get_sample_value("provisioner_catalog_age_seconds") == 60.0


def test_plan_input_holds_bound_and_pending_pods_but_not_finished_ones():
    done = pod("job-1", node="node-a")
    done["status"]["phase"] = "Succeeded"
    bound, pending = pod("db-0", node="node-a"), pod("web-0")
    objects = {"Pod": [done, bound, pending], "Node": [node("node-a")], "NodePool": [nodepool()],
               "EC2NodeClass": [nodeclass()], "NodeClaim": [nodeclaim("default-abc")], "DaemonSet": [],
               "NodeOverlay": [overlay()]}
    names = [(o["kind"], o["metadata"]["name"]) for o in plan_input(objects, [pending])]
    assert names == [("EC2NodeClass", "default"), ("NodePool", "default"), ("NodeOverlay", "odigos"), ("Node", "node-a"),
                     ("NodeClaim", "default-abc"), ("Pod", "db-0"), ("Pod", "web-0")]
    assert is_bound(bound) and not is_bound(done) and is_unschedulable(pending)


def on_real_core(kube: FakeKube, metrics: Metrics, recorder=None) -> Controller:
    """A Controller planning with the real core on the bundled catalog (its choice reported to
    `metrics`), every watched kind listed from `kube`."""
    holder = CatalogHolder(None, core.load_bundled, on_change=lambda c: metrics.set_catalog(c.source, c.as_of))
    holder.start(0.0)
    controller = Controller(plan=core.make_plan(holder, "us-east-1"), metrics=metrics, recorder=recorder,
                            validate=core.validate)
    for kind in WATCHED:
        Reflector(kind, kube, lambda m: controller.handle(m, 0.0)).step()
    return controller


def test_advisor_on_real_core_prices_plan_and_flags_oversized_pod():
    kube = cluster(FakeKube(), nodeclass(), nodepool(), pod("web-0", cpu="2", memory="4Gi"),
                   pod("huge-0", cpu="1000"))
    metrics = Metrics()
    controller = on_real_core(kube, metrics, recorder=EventRecorder(kube, bucket=TokenBucket(10, 10), instance="test"))
    result = controller.reconcile(5.0)
    assert [u["pod"] for u in result["unschedulable"]] == ["default/huge-0"]
    assert [c["pods"] for c in result["nodeclaims"]] == [["default/web-0"]]
    price = result["summary"]["price_usd_hour"]
    assert price > 0
    assert metrics.registry.get_sample_value("provisioner_plan_hourly_price_usd") == price
    assert metrics.registry.get_sample_value("provisioner_nodepool_projected_hourly_cost_usd",
                                             {"nodepool": "default"}) == price
    assert [e["involvedObject"]["name"] for e in kube.events.values()] == ["huge-0"]
    assert "requests cpu=1000" in next(iter(kube.events.values()))["message"]


def test_advisor_on_real_core_counts_inflight_capacity():
    kube = cluster(FakeKube(), nodeclass(), nodepool(), nodeclaim("default-abc"), pod("web-0", cpu="1"))
    result = on_real_core(kube, Metrics()).reconcile(5.0)
    assert result["nodeclaims"] == []  # Karpenter already launched room for it
    assert result["unschedulable"] == []


def test_advisor_raises_no_event_for_a_pod_karpenter_ignores():
    """provisioner.go Validate / GetPendingPods: a pod whose required node affinity uses matchFields
    is ignored ("ignoring pod"), never reported as unschedulable, so no "will never schedule" Event."""
    fields = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-x"]}]}]}}}}
    pinned = pod("pinned-0", cpu="1000")
    pinned["spec"].update(fields)
    kube = cluster(FakeKube(), nodeclass(), nodepool(), pinned)
    controller = on_real_core(kube, Metrics(), recorder=EventRecorder(kube, bucket=TokenBucket(10, 10), instance="test"))
    result = controller.reconcile(5.0)
    assert result["unschedulable"] == [] and result["nodeclaims"] == []
    assert result["ignored"] == [{"pod": "default/pinned-0", "reason": "node selector term with matchFields is not supported"}]
    assert kube.events == {}


def test_catalog_holder_starts_on_bundled_then_refresh_switches_to_live():
    sources = []
    holder = CatalogHolder(lambda: ("LIVE", None), lambda: ("BUNDLED", 1.0), on_change=lambda c: sources.append(c.source))
    assert holder.start(10.0).catalog == "BUNDLED"
    assert holder.refresh(20.0).catalog == "LIVE"
    assert sources == ["bundled", "live"]


def test_live_loader_reads_the_core_live_catalog_for_the_region(monkeypatch):
    calls = []

    def fake_live(region, **kwargs):
        calls.append(region)
        return "LIVE-CATALOG"
    monkeypatch.setattr("provisioner.catalog.aws.load_live_catalog", fake_live)
    choice = choose_catalog(core.live_loader("eu-west-1"), core.load_bundled, now=7.0)
    assert (choice.catalog, choice.source, choice.as_of) == ("LIVE-CATALOG", "live", 7.0)
    assert calls == ["eu-west-1"]


def test_live_loader_failure_falls_back_to_bundled(monkeypatch):
    def denied(region, **kwargs):
        raise RuntimeError("An error occurred (UnauthorizedOperation) when calling DescribeInstanceTypes")
    monkeypatch.setattr("provisioner.catalog.aws.load_live_catalog", denied)
    choice = choose_catalog(core.live_loader("eu-west-1"), core.load_bundled, now=7.0)
    assert choice.source == "bundled" and len(choice.catalog.types) > 1000
    assert "UnauthorizedOperation" in choice.error


def test_advisor_on_real_core_sees_extended_resource_of_node_overlay():
    """Odigos' k8s-virtual-device pods are schedulable only through the NodeOverlay: the advisor
    must watch it, or it would flag every instrumented pod."""
    def plan_with(*extra):
        kube = cluster(FakeKube(), nodeclass(), nodepool(), instrumented("app-0"), *extra)
        return on_real_core(kube, Metrics()).reconcile(5.0)
    assert [u["pod"] for u in plan_with()["unschedulable"]] == ["default/app-0"]
    with_overlay = plan_with(overlay())
    assert with_overlay["unschedulable"] == [] and len(with_overlay["nodeclaims"]) == 1
