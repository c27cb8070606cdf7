"""The advisor watches PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes and
gives them to the scheduling core, so volume topology and attach limits apply in its plans as in
`simulate` (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/volumetopology.go,
pkg/scheduling/volumeusage.go; suite tests named per test). Objects come over the real adapter
(the official client) from the fake API server, as in the cluster."""
import pytest

from provisioner.controller import core
from provisioner.controller.batcher import Batcher, TokenBucket
from provisioner.controller.catalog import CatalogHolder
from provisioner.controller.controller import Controller
from provisioner.controller.events import EventRecorder
from provisioner.controller.kinds import CSINODE, PV, PVC, STORAGECLASS, WATCHED
from provisioner.controller.kube import Gone
from provisioner.controller.metrics import Metrics
from provisioner.controller.pending import plan_input
from provisioner.controller.reflector import Reflector
from tests.provisioner.controller_fakes import (FakeApiServer, FakeKube, cluster, gone, node, nodeclass, nodepool,
                                                pod)

ZONE = "topology.kubernetes.io/zone"
EBS = "ebs.csi.aws.com"


def claim(name: str, *, volume: str | None = None, storage_class: str | None = None, rv: str = "1",
          namespace: str = "default") -> dict:
    """A claim as the API server returns it: bound ones carry status and bind-completed."""
    meta: dict = {"name": name, "namespace": namespace, "uid": f"uid-pvc-{name}", "resourceVersion": rv}
    spec: dict = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": "Bound" if volume else "Pending"}}


def volume(name: str, zone: str, *, rv: str = "1") -> dict:
    """An EBS volume: its CSI driver pins it to one zone through node affinity."""
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-pv-{name}", "resourceVersion": rv},
            "spec": {"capacity": {"storage": "10Gi"}, "csi": {"driver": EBS, "volumeHandle": f"vol-{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": ZONE, "operator": "In", "values": [zone]}]}]}}},
            "status": {"phase": "Bound"}}


def storage_class(name: str, zones: list[str] | None = None, mode: str = "WaitForFirstConsumer") -> dict:
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": name, "uid": f"uid-sc-{name}", "resourceVersion": "1"},
           "provisioner": EBS, "volumeBindingMode": mode}
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return obj


def csinode(name: str, count: int) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name, "uid": f"uid-csinode-{name}", "resourceVersion": "1"},
            "spec": {"drivers": [{"name": EBS, "nodeID": f"i-{name}", "allocatable": {"count": count}}]}}


def with_claims(p: dict, *claims: str) -> dict:
    p["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return p


def zonal_pool(zones: list[str]) -> dict:
    pool = nodepool()
    pool["spec"]["template"]["spec"]["requirements"].append({"key": ZONE, "operator": "In", "values": zones})
    return pool


def advisor(api, kube: FakeKube | None = None) -> Controller:
    """The advisor on the real core and bundled catalog; with `kube`, it records Events there."""
    holder = CatalogHolder(None, core.load_bundled, on_change=lambda c: None)
    holder.start(0.0)
    recorder = EventRecorder(kube, bucket=TokenBucket(10, 10), instance="test") if kube is not None else None
    return Controller(plan=core.make_plan(holder, "us-east-1"), metrics=Metrics(), recorder=recorder,
                      validate=core.validate, batcher=Batcher(1.0, 10.0))


def listed(controller: Controller, api) -> dict[str, Reflector]:
    reflectors = {k.kind: Reflector(k, api, lambda m: controller.handle(m, 0.0)) for k in WATCHED}
    for reflector in reflectors.values():
        reflector.step()
    assert controller.ready
    return reflectors


def plan_over_http(*objects: dict, events: bool = False) -> tuple[dict, FakeKube]:
    kube = cluster(FakeKube(), *objects)
    with FakeApiServer(kube) as server:
        api = server.api()
        controller = advisor(api, kube if events else None)
        listed(controller, api)
    return controller.reconcile(5.0), kube


def test_advisor_plans_pod_of_a_bound_volume_in_the_volume_zone():
    """suite_test.go (provisioning) "should schedule to volume zones if volume already bound": the
    EBS volume lives in us-east-1b, so the NodeClaim must be launched there; without the volume
    the same pod goes to the cheapest zone, which is another one."""
    result, _ = plan_over_http(nodeclass(), nodepool(), claim("data", volume="pv-1"), volume("pv-1", "us-east-1b"),
                               with_claims(pod("db-0"), "data"))
    assert result["unschedulable"] == [] and result["ignored"] == []
    assert [(c["zone"], c["pods"]) for c in result["nodeclaims"]] == [("us-east-1b", ["default/db-0"])]
    free, _ = plan_over_http(nodeclass(), nodepool(), pod("db-0"))
    assert [c["zone"] for c in free["nodeclaims"]] != ["us-east-1b"]


def test_advisor_plans_wait_for_first_consumer_claim_in_storage_class_zones():
    """suite_test.go (provisioning) "should schedule to storage class zones if volume does not exist"."""
    result, _ = plan_over_http(nodeclass(), nodepool(), storage_class("zonal", ["us-east-1c"]),
                               claim("data", storage_class="zonal"), with_claims(pod("db-0"), "data"))
    assert [(c["zone"], c["pods"]) for c in result["nodeclaims"]] == [("us-east-1c", ["default/db-0"])]


def test_advisor_records_no_event_for_pod_whose_claim_does_not_exist():
    """volumetopology.go ValidatePersistentVolumeClaims; suite_test.go (provisioning) "should not
    schedule if invalid pvc": Karpenter ignores the pod, so the advisor says nothing on it, even
    when its requests fit no instance type."""
    result, kube = plan_over_http(nodeclass(), nodepool(), with_claims(pod("db-0", cpu="1000"), "missing"),
                                  pod("huge-0", cpu="1000"), events=True)
    assert result["ignored"] == [{"pod": "default/db-0", "reason": "persistentvolumeclaim default/missing not found"}]
    assert [u["pod"] for u in result["unschedulable"]] == ["default/huge-0"]
    assert sorted(e["involvedObject"]["name"] for e in kube.events.values()) == ["huge-0"]


@pytest.mark.parametrize("immediate", [claim("data", storage_class="io2-now"), claim("data")],
                         ids=["immediate-binding", "no-storage-class"])
def test_advisor_records_no_event_for_pod_whose_claim_karpenter_cannot_use(immediate):
    """suite_test.go (provisioning) "should not schedule with an empty storage class if the pvc is
    not bound" and "should not launch nodes for pod with unbound volume for volumeBindingMode
    immediate" (scheduling suite): ignored, no Event."""
    result, kube = plan_over_http(nodeclass(), nodepool(), storage_class("io2-now", mode="Immediate"), immediate,
                                  with_claims(pod("db-0"), "data"), events=True)
    assert [i["pod"] for i in result["ignored"]] == ["default/db-0"]
    assert result["nodeclaims"] == [] and result["unschedulable"] == [] and kube.events == {}


def test_advisor_records_event_for_pod_whose_volume_zone_no_nodepool_offers():
    """suite_test.go (provisioning) "should not schedule if storage class zones are incompatible":
    the claim is valid, so the pod is unschedulable and gets the "will never schedule" Event."""
    result, kube = plan_over_http(nodeclass(), zonal_pool(["us-east-1a"]), claim("data", volume="pv-1"),
                                  volume("pv-1", "us-east-1c"), with_claims(pod("db-0"), "data"), events=True)
    assert [u["pod"] for u in result["unschedulable"]] == ["default/db-0"]
    assert [e["involvedObject"]["name"] for e in kube.events.values()] == ["db-0"]


def test_advisor_applies_csinode_attach_limit_of_existing_node():
    """suite_test.go (scheduling) "should launch multiple nodes if required due to volume limits";
    existingnode.go CanAdd checks volumeUsage against the node's CSINode: node-a attaches one EBS
    volume and holds one, so the pending pod's claim needs a new node."""
    objects = [nodeclass(), nodepool(), node("node-a", labels={ZONE: "us-east-1a"}), storage_class("gp3"),
               claim("used", volume="pv-used"), volume("pv-used", "us-east-1a"),
               with_claims(pod("db-0", cpu="100m", node="node-a"), "used"),
               claim("data", storage_class="gp3"), with_claims(pod("db-1", cpu="100m"), "data")]
    roomy, _ = plan_over_http(*objects, csinode("node-a", 2))
    assert roomy["nodeclaims"] == []  # room for a second volume: the pod fits node-a
    full, _ = plan_over_http(*objects, csinode("node-a", 1))
    assert [c["pods"] for c in full["nodeclaims"]] == [["default/db-1"]]


def test_claim_created_after_the_pod_is_seen_through_the_watch():
    """The pod is ignored while its claim is missing; the claim's and volume's ADDED events trigger
    a batch, and the next plan places the pod in the volume's zone."""
    kube = cluster(FakeKube(), nodeclass(), nodepool(), with_claims(pod("db-0"), "data"))
    kube.streams["PersistentVolume"].append([{"type": "ADDED", "object": volume("pv-1", "us-east-1b", rv="1001")}])
    kube.streams["PersistentVolumeClaim"].append([{"type": "ADDED", "object": claim("data", volume="pv-1", rv="1002")}])
    with FakeApiServer(kube) as server:
        api = server.api()
        controller = advisor(api)
        reflectors = listed(controller, api)
        before = controller.reconcile(5.0)
        controller.batcher.close()
        reflectors["PersistentVolume"].step()
        reflectors["PersistentVolumeClaim"].step()
    assert [i["pod"] for i in before["ignored"]] == ["default/db-0"] and before["nodeclaims"] == []
    assert controller.batcher.deadline() is not None  # the change concerns a pending pod's plan
    after = controller.reconcile(10.0)
    assert [(c["zone"], c["pods"]) for c in after["nodeclaims"]] == [("us-east-1b", ["default/db-0"])]


def test_relist_after_410_drops_a_claim_deleted_meanwhile():
    kube = cluster(FakeKube(), nodeclass(), nodepool(), claim("data", volume="pv-1"), volume("pv-1", "us-east-1b"),
                   with_claims(pod("db-0"), "data"))
    kube.streams["PersistentVolumeClaim"].append(gone())
    with FakeApiServer(kube) as server:
        api = server.api()
        controller = advisor(api)
        reflectors = listed(controller, api)
        assert controller.cache.count("PersistentVolumeClaim") == 1
        kube.objects["PersistentVolumeClaim"].clear()
        reflectors["PersistentVolumeClaim"].step()  # the watch has expired...
        reflectors["PersistentVolumeClaim"].step()  # ...so it lists again
    assert controller.cache.count("PersistentVolumeClaim") == 0
    assert controller.metrics.registry.get_sample_value(
        "provisioner_api_failures_total", {"kind": "PersistentVolumeClaim", "operation": "watch", "code": "410"}) == 1
    result = controller.reconcile(5.0)
    assert [i["pod"] for i in result["ignored"]] == ["default/db-0"]


@pytest.mark.parametrize("kind,obj", [(PVC, claim("data", volume="pv-1")), (PV, volume("pv-1", "us-east-1b")),
                                      (STORAGECLASS, storage_class("gp3")), (CSINODE, csinode("node-a", 25))],
                         ids=lambda v: getattr(v, "kind", None))
def test_adapter_lists_and_watches_storage_kind_at_its_api_path(kind, obj):
    kube = cluster(FakeKube(), obj)
    changed = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1001"}}
    kube.streams[kind.kind].append([{"type": "MODIFIED", "object": changed}, gone()])
    with FakeApiServer(kube) as server:
        api = server.api()
        page = api.list(kind, limit=10, continue_token=None)
        events = []
        with pytest.raises(Gone):
            events.extend(api.watch(kind, resource_version="1000", timeout_seconds=5))
        paths = [path.split("?")[0] for _, path, _ in server.requests]
    prefix = f"/apis/{kind.group}" if kind.group else "/api"
    assert paths == [f"{prefix}/{kind.version}/{kind.plural}"] * 2
    assert [i["metadata"]["name"] for i in page["items"]] == [obj["metadata"]["name"]]
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [("MODIFIED", "1001")]


def test_claim_without_namespace_is_skipped_and_counted():
    broken = claim("data")
    del broken["metadata"]["namespace"]
    controller = Controller(plan=lambda objects: {}, metrics=Metrics(), recorder=None)
    kube = cluster(FakeKube(), broken, claim("logs"))
    Reflector(PVC, kube, lambda m: controller.handle(m, 0.0)).step()
    assert [o["metadata"]["name"] for o in controller.cache.items("PersistentVolumeClaim")] == ["logs"]
    assert controller.metrics.registry.get_sample_value(
        "provisioner_malformed_objects_total", {"kind": "PersistentVolumeClaim"}) == 1


def test_plan_input_holds_storage_objects():
    objects = {"PersistentVolumeClaim": [claim("data")], "PersistentVolume": [volume("pv-1", "us-east-1a")],
               "StorageClass": [storage_class("gp3")], "CSINode": [csinode("node-a", 25)], "Pod": []}
    names = [(o["kind"], o["metadata"]["name"]) for o in plan_input(objects, [pod("db-0")])]
    assert names == [("StorageClass", "gp3"), ("PersistentVolume", "pv-1"), ("PersistentVolumeClaim", "data"),
                     ("CSINode", "node-a"), ("Pod", "db-0")]
