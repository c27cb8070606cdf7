"""Issue 13: the simulator and the advisor see a live cluster as Karpenter v1.14 does.

Each test names the upstream file (kubernetes-sigs/karpenter or aws/karpenter-provider-aws at
v1.14.1) and, where one exists, the suite test it follows.
"""
import pytest

from provisioner import simulate
from provisioner.manifests import read_documents

from tests.provisioner.prov_builders import (deployment, node, nodeclass, nodepool, pod, req, run, run_core, fake_type,
                           taint, term)

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
TYPES = [fake_type("small", "2", "8Gi"), fake_type("medium", "4", "16Gi"), fake_type("large", "8", "32Gi")]


def core(*objects, **kwargs):
    return run_core(*objects, types=TYPES, **kwargs)


def ignored(result) -> dict:
    return {i.pod: i.reason for i in result.ignored}


def owned(obj, kind, name, api_version="apps/v1", uid=None):
    ref = {"apiVersion": api_version, "kind": kind, "name": name}
    if uid:
        ref["uid"] = uid
    obj["metadata"].setdefault("ownerReferences", []).append(ref)
    return obj


# --- which pods Karpenter provisions for (pkg/utils/pod/scheduling.go, provisioner.go Validate) ----

def test_daemonset_pending_pod_is_ignored_not_launched_for():
    """scheduling.go IsProvisionable: !IsOwnedByDaemonSet."""
    result = core(owned(pod("agent-x", cpu="1"), "DaemonSet", "agent"), pod("web", cpu="1"))
    assert "owned by a DaemonSet" in ignored(result)["default/agent-x"]
    assert [nc.pods for nc in result.nodeclaims] == [["default/web"]] and result.pods == 1


def test_mirror_pod_owned_by_its_node_is_ignored():
    """scheduling.go IsProvisionable: !IsOwnedByNode (static pods)."""
    result = core(owned(pod("etcd-x", cpu="1"), "Node", "node-x", api_version="v1"))
    assert "static (mirror) pod" in ignored(result)["default/etcd-x"] and result.nodeclaims == []


def test_pod_with_scheduling_gates_is_ignored():
    """scheduling.go FailedToSchedule: a gated pod is never marked PodScheduled=Unschedulable."""
    gated = pod("gated", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    result = core(gated)
    assert "schedulingGates (example.com/quota)" in ignored(result)["default/gated"] and result.nodeclaims == []


def test_pod_the_scheduler_is_preempting_for_is_ignored():
    """scheduling.go IsProvisionable: !IsPreempting (status.nominatedNodeName)."""
    preempting = pod("preempting", cpu="1")
    preempting["status"] = {"phase": "Pending", "nominatedNodeName": "node-a"}
    result = core(preempting)
    assert "preempting room for it on node node-a" in ignored(result)["default/preempting"]
    assert result.nodeclaims == [] and result.unschedulable == []


def test_pod_with_match_fields_affinity_is_ignored():
    """provisioner.go validateNodeSelectorTerm: "node selector term with matchFields is not supported"."""
    pinned = pod("pinned", cpu="1")
    pinned["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    result = core(pinned)
    assert ignored(result) == {"default/pinned": "node selector term with matchFields is not supported"}


def test_pod_refusing_karpenter_nodes_is_ignored():
    """provisioner.go validateKarpenterManagedLabelCanExist (karpenter.sh/nodepool DoesNotExist)."""
    result = core(pod("ctrl", cpu="1", required=[[req("karpenter.sh/nodepool", "DoesNotExist")]]))
    assert "not run on a Karpenter provisioned node" in ignored(result)["default/ctrl"] and result.nodeclaims == []


def test_terminal_pod_is_ignored():
    """scheduling.go IsTerminal: Succeeded and Failed pods hold nothing and are not provisioned for."""
    done = pod("done", cpu="1")
    done["status"] = {"phase": "Succeeded"}
    result = core(done)
    assert ignored(result) == {"default/done": "terminal (phase Succeeded)"} and result.pods == 0


def test_ignored_pods_are_in_the_json_but_not_in_the_summary():
    gated = pod("gated", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "g"}]
    data = run(gated, pod("web", cpu="1")).to_dict()
    assert [i["pod"] for i in data["ignored"]] == ["default/gated"]
    assert data["summary"]["pods"] == 1 and data["summary"]["scheduled"] == 1


# --- in-flight capacity (pkg/controllers/state/statenode.go, cluster.go) ----------------------------

def nodeclaim(name, *, node_name=None, provider_id=None, allocatable=None, capacity=None, labels=None,
              taints=(), startup_taints=(), deleting=False, launched=True):
    status = {}
    if launched:
        status["providerID"] = provider_id or f"aws:///test-zone-1/i-{name}"
        status["allocatable"] = allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"}
        status["capacity"] = capacity or status["allocatable"]
    if node_name:
        status["nodeName"] = node_name
    meta = {"name": name, "labels": {"karpenter.sh/nodepool": "default", ZONE: "test-zone-1",
                                     "node.kubernetes.io/instance-type": "medium", **(labels or {})}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, "requirements": [], "taints": list(taints),
                     "startupTaints": list(startup_taints)}, "status": status}


def karpenter_node(name, *, initialized, provider_id, labels=None, **kwargs):
    base = {"karpenter.sh/nodepool": "default", "karpenter.sh/registered": "true", ZONE: "test-zone-1",
            "node.kubernetes.io/instance-type": "medium", HOST: name}
    if initialized:
        base["karpenter.sh/initialized"] = "true"
    obj = node(name, labels={**base, **(labels or {})}, **kwargs)
    obj["spec"]["providerID"] = provider_id
    return obj


def test_launched_nodeclaim_without_node_takes_pending_pods():
    """suite_test.go (scheduling) "should not launch a second node if there is an in-flight node that can
    support the pod"; cluster.go: a NodeClaim with a providerID is cluster state before its Node."""
    result = core(nodeclaim("default-abc"), pod("web", cpu="1"))
    assert result.nodeclaims == [] and result.existing == {"default-abc": ["default/web"]}


def test_nodeclaim_that_has_not_launched_is_not_capacity():
    """cluster.go UpdateNodeClaim: only NodeClaims with status.providerID enter cluster state."""
    result = core(nodeclaim("default-abc", launched=False), pod("web", cpu="1"))
    assert len(result.nodeclaims) == 1 and result.existing == {}


def test_terminating_nodeclaim_is_not_capacity():
    """suite_test.go "should launch a second node if an in-flight node is terminating"."""
    result = core(nodeclaim("default-abc", deleting=True), pod("web", cpu="1"))
    assert len(result.nodeclaims) == 1 and result.existing == {}


def test_uninitialized_node_ignores_its_startup_taints():
    """suite_test.go "should assume pod will schedule to a tainted node with a custom startup taint";
    statenode.go Taints(): startup and known ephemeral taints are dropped until initialized."""
    startup = taint("example.com/agent-not-ready")
    objs = [nodeclaim("nc-1", node_name="node-1", provider_id="aws:///z/i-1", startup_taints=[startup]),
            karpenter_node("node-1", initialized=False, provider_id="aws:///z/i-1",
                           taints=[startup, taint("node.kubernetes.io/not-ready", effect="NoExecute")]),
            pod("web", cpu="1")]
    result = core(*objs)
    assert result.nodeclaims == [] and result.existing == {"node-1": ["default/web"]}


def test_initialized_node_keeps_its_ephemeral_taints():
    """suite_test.go (scheduling) "should assume pod will schedule to a node with ephemeral taint
    node.kubernetes.io/not-ready:NoExecute when the node is uninitialized" (its initialized half) and
    state/suite_test.go "should consider ephemeral taints on a managed node after the node is initialized"."""
    objs = [nodeclaim("nc-1", node_name="node-1", provider_id="aws:///z/i-1"),
            karpenter_node("node-1", initialized=True, provider_id="aws:///z/i-1",
                           taints=[taint("node.kubernetes.io/not-ready", effect="NoExecute")]),
            pod("web", cpu="1")]
    result = core(*objs)
    assert len(result.nodeclaims) == 1 and result.existing == {}


def test_unmanaged_node_keeps_its_ephemeral_taints():
    """state/suite_test.go "should consider ephemeral taints on an unmanaged node that isn't initialized";
    statenode.go Taints() drops them only when Managed() (a NodeClaim is tracked) and not initialized."""
    not_ready = node("node-1", labels={HOST: "node-1", ZONE: "test-zone-1"},
                     taints=[taint("node.kubernetes.io/not-ready", effect="NoSchedule")])
    result = core(not_ready, pod("web", cpu="1"))
    assert len(result.nodeclaims) == 1 and result.existing == {}
    ready = node("node-1", labels={HOST: "node-1", ZONE: "test-zone-1"})
    assert core(ready, pod("web", cpu="1")).existing == {"node-1": ["default/web"]}


def test_initialized_node_keeps_its_startup_taints():
    """suite_test.go "should not assume pod will schedule to a node with startup taints after initialization"."""
    startup = taint("example.com/agent-not-ready")
    objs = [nodeclaim("nc-1", node_name="node-1", provider_id="aws:///z/i-1", startup_taints=[startup]),
            karpenter_node("node-1", initialized=True, provider_id="aws:///z/i-1", taints=[startup]),
            pod("web", cpu="1")]
    result = core(*objs)
    assert len(result.nodeclaims) == 1 and result.existing == {}


def test_uninitialized_node_takes_zeroed_extended_resources_from_its_nodeclaim():
    """suite_test.go "should handle resource zeroing of extended resources by kubelet" (#1459);
    statenode.go Allocatable(): zero quantities on the Node come from the NodeClaim."""
    gpu = {"cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "1"}
    zeroed = {**gpu, "nvidia.com/gpu": "0"}
    objs = [nodeclaim("nc-1", node_name="node-1", provider_id="aws:///z/i-1", allocatable=gpu),
            karpenter_node("node-1", initialized=False, provider_id="aws:///z/i-1", allocatable=zeroed),
            pod("train", cpu="1", resources={"nvidia.com/gpu": "1"})]
    result = core(*objs)
    assert result.existing == {"node-1": ["default/train"]} and result.unschedulable == []


def test_deleting_node_is_not_used_and_its_pods_are_scheduled_again():
    """suite_test.go "Deleting Nodes": "should re-schedule pods from a deleting node when pods are active"
    and "should not re-schedule pods from a deleting node when pods are owned by a DaemonSet";
    provisioner.go Schedule: nodes.Deleting().CurrentlyReschedulablePods."""
    doomed = node("old-1", labels={HOST: "old-1"})
    doomed["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    objs = [doomed, pod("web", cpu="1", node_name="old-1"),
            owned(pod("agent", cpu="100m", node_name="old-1"), "DaemonSet", "agent"), pod("new", cpu="1")]
    result = core(*objs)
    placed = sorted(p for nc in result.nodeclaims for p in nc.pods)
    assert placed == ["default/new", "default/web"] and result.existing == {} and result.pods == 2
    assert any("old-1" in w for w in result.warnings)


# --- ordering (scheduler.go add, nodepool.go OrderByWeight, sortExistingNodes) ----------------------

def test_inflight_nodeclaims_are_tried_fewest_pods_first():
    """scheduler.go add(): `sort.Slice(s.newNodeClaims, ... len(Pods) < len(Pods))` before each pod, so
    small pods spread over the open NodeClaims instead of filling the first."""
    anti = [term(HOST, {"role": "db"})]
    objs = [pod(f"db-{i}", labels={"role": "db"}, cpu="2", anti_affinity=anti) for i in range(2)]
    objs += [pod(f"web-{i}", cpu="100m") for i in range(4)]
    result = core(*objs)
    assert sorted(len(nc.pods) for nc in result.nodeclaims) == [3, 3]


def test_bulk_placement_gives_the_one_by_one_plan_under_fewest_pods_first():
    """Bulk placement of identical pods must equal placing them one at a time (scheduler.go add)."""
    anti = [term(HOST, {"role": "db"})]
    base = [pod(f"db-{i}", labels={"role": "db"}, cpu="2", anti_affinity=anti) for i in range(3)]
    bulk = core(*base, deployment("web", replicas=7, cpu="100m"))
    one_by_one = core(*base, *[pod(f"web-{i}", labels={"app": "web", "i": str(i)}, cpu="100m") for i in range(7)])
    assert sorted(len(nc.pods) for nc in bulk.nodeclaims) == sorted(len(nc.pods) for nc in one_by_one.nodeclaims) == [3, 3, 4]


@pytest.mark.slow
def test_initialized_existing_nodes_are_tried_before_uninitialized_ones():
    """scheduler.go sortExistingNodes; suite_test.go "should order initialized nodes for scheduling
    uninitialized nodes"."""
    objs = [nodeclaim("nc-a", node_name="a-node", provider_id="aws:///z/i-a"),
            karpenter_node("a-node", initialized=False, provider_id="aws:///z/i-a"),
            karpenter_node("b-node", initialized=True, provider_id="aws:///z/i-b"), pod("web", cpu="1")]
    assert core(*objs).existing == {"b-node": ["default/web"]}


# --- rounds (scheduler.go subtractMax; suite_test.go limits) ---------------------------------------

def test_nodepool_limit_reserves_largest_option_and_defers_the_rest_to_a_later_round():
    """scheduler.go addToNewNodeClaim: remainingResources = subtractMax(...) reserves the largest option;
    the pod that no longer fits is deferred and launched in the next provisioning round, once the
    launched NodeClaims count with their real size (suite_test.go "should not schedule to a nodepool
    after a scheduling round if limits would be exceeded" for the limit itself)."""
    pool = nodepool(limits={"cpu": "12"})
    anti = [term(HOST, {"role": "db"})]
    pods = [pod(f"db-{i}", labels={"role": "db"}, cpu="1500m", anti_affinity=anti) for i in range(3)]
    result = core(pool, *pods)
    assert result.unschedulable == [] and result.rounds == 2
    assert sorted(nc.round for nc in result.nodeclaims) == [1, 1, 2]
    assert all(nc.instance_type == "small" for nc in result.nodeclaims)


def test_outcome_after_the_last_round_lists_what_stays_unschedulable():
    """The limit eventually runs out: what is left after the rounds Karpenter would run is reported."""
    pool = nodepool(limits={"cpu": "6"})
    anti = [term(HOST, {"role": "db"})]
    pods = [pod(f"db-{i}", labels={"role": "db"}, cpu="1500m", anti_affinity=anti) for i in range(5)]
    result = core(pool, *pods)
    assert len(result.nodeclaims) == 3 and len(result.unschedulable) == 2 and result.rounds == 2
    assert "limits" in result.unschedulable[0].reason


# --- volumes (pkg/controllers/provisioning/scheduling/volumetopology.go) ----------------------------

def pvc(name, *, volume=None, storage_class=None, namespace="default"):
    spec = {}
    if volume:
        spec["volumeName"] = volume
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def pv(name, zone, local=False):
    spec = {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": [zone]}] + ([{"key": HOST, "operator": "In", "values": ["n1"]}] if local else [])}]}}}
    if local:
        spec["local"] = {"path": "/mnt"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def storage_class(name, zones=None, mode="WaitForFirstConsumer", default=False):
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
           "provisioner": "ebs.csi.aws.com", "volumeBindingMode": mode}
    if default:
        obj["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    return obj


def with_claim(p, claim, ephemeral_class=None):
    vol = {"name": "data"}
    if ephemeral_class is not None:
        vol["ephemeral"] = {"volumeClaimTemplate": {"spec": {"storageClassName": ephemeral_class}}}
    else:
        vol["persistentVolumeClaim"] = {"claimName": claim}
    p["spec"]["volumes"] = [vol]
    return p


def test_bound_volume_pins_the_zone():
    """suite_test.go "should schedule to volume zones if volume already bound"."""
    result = core(pvc("data", volume="pv-1"), pv("pv-1", "test-zone-3"), with_claim(pod("db", cpu="1"), "data"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-3"


def test_local_volume_drops_its_hostname_but_keeps_the_zone():
    """volumetopology.go getPersistentVolumeRequirements: hostname of local/hostPath volumes is rejected."""
    result = core(pvc("data", volume="pv-1"), pv("pv-1", "test-zone-2", local=True), with_claim(pod("db", cpu="1"), "data"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-2" and result.unschedulable == []


def test_storage_class_allowed_topologies_pin_an_unbound_claim():
    """suite_test.go "should schedule to storage class zones if volume does not exist"."""
    result = core(pvc("data", storage_class="zonal"), storage_class("zonal", ["test-zone-2"]),
                  with_claim(pod("db", cpu="1"), "data"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-2"


def test_ephemeral_volume_uses_its_storage_class_zones():
    """suite_test.go "should schedule to storage class zones if volume does not exist (ephemeral volume)"."""
    result = core(storage_class("zonal", ["test-zone-1"]), with_claim(pod("db", cpu="1"), None, ephemeral_class="zonal"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-1"


def test_incompatible_volume_and_pod_zones_are_unschedulable():
    """suite_test.go "should not schedule if volume zones are incompatible"."""
    p = with_claim(pod("db", cpu="1", node_selector={ZONE: "test-zone-1"}), "data")
    result = core(pvc("data", volume="pv-1"), pv("pv-1", "test-zone-3"), p)
    assert [u.pod for u in result.unschedulable] == ["default/db"]


def storage_class_terms(name, *terms):
    """A WaitForFirstConsumer StorageClass whose allowedTopologies are these OR-ed terms ({key: values})."""
    obj = storage_class(name)
    obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
                                for t in terms]
    return obj


def with_claims(p, *claims):
    p["spec"]["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return p


INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def test_volume_alternatives_fall_through_to_one_that_fits():
    """suite_test.go "should schedule pods when a valid multi-volume topology alternative remains after
    pruning disjoint branches"; volumetopology.go GetRequirements (cross product, disjoint branches
    pruned) and nodeclaim.go CanAdd (each alternative in order): the first, (xlarge, zone 2), has no
    instance type, so the second, (small, zone 1), is used."""
    a = storage_class_terms("a", {INSTANCE_TYPE: ["xlarge"]}, {INSTANCE_TYPE: ["small"]})
    b = storage_class_terms("b", {ZONE: ["test-zone-1"], INSTANCE_TYPE: ["small"]},
                            {ZONE: ["test-zone-2"], INSTANCE_TYPE: ["xlarge"]})
    result = core(a, b, pvc("pa", storage_class="a"), pvc("pb", storage_class="b"),
                  with_claims(pod("db", cpu="1"), "pa", "pb"))
    assert result.unschedulable == [] and len(result.nodeclaims) == 1
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-1"
    assert result.nodeclaims[0].instance_type_options == ["small"]


def test_volume_alternatives_narrow_the_node_to_the_first_that_fits():
    """nodeclaim.go CanAdd / tryVolumeAlternative: OR-ed terms are tried in order and the first that
    fits is added to the NodeClaim's requirements, so terms [zone 2] OR [zone 1] pin zone 2 (not
    zone 1 or 2)."""
    result = core(storage_class_terms("zonal", {ZONE: ["test-zone-2"]}, {ZONE: ["test-zone-1"]}),
                  pvc("data", storage_class="zonal"), with_claim(pod("db", cpu="1"), "data"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-2"


def test_volume_alternatives_are_tried_on_existing_nodes():
    """existingnode.go CanAdd: each alternative in turn on the node; the second fits a zone-2 node."""
    existing = node("node-1", labels={HOST: "node-1", ZONE: "test-zone-2"})
    result = core(existing, storage_class_terms("zonal", {ZONE: ["test-zone-1"]}, {ZONE: ["test-zone-2"]}),
                  pvc("data", storage_class="zonal"), with_claim(pod("db", cpu="1"), "data"))
    assert result.existing == {"node-1": ["default/db"]} and result.nodeclaims == []


def test_statefulset_claims_follow_their_storage_class():
    """StatefulSet volumeClaimTemplates become per-replica claims of the template's StorageClass."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
               "containers": [{"name": "db", "resources": {"requests": {"cpu": "1"}}}]}},
               "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"storageClassName": "zonal"}}]}}
    result = core(storage_class("zonal", ["test-zone-2"]), sts)
    assert {nc.labels[ZONE] for nc in result.nodeclaims} == {"test-zone-2"} and result.unschedulable == []


@pytest.mark.parametrize("objs,reason", [
    ([], "persistentvolumeclaim default/data not found"),
    ([pvc("data", storage_class="fast"), storage_class("fast", mode="Immediate")], "immediate volume binding mode must be bound"),
    ([pvc("data")], "must define a storage class"),
    ([pvc("data", volume="gone")], "persistentvolume gone of claim default/data not found"),
])
def test_pod_with_a_claim_karpenter_cannot_use_is_ignored(objs, reason):
    """volumetopology.go ValidatePersistentVolumeClaims; suite_test.go "should not schedule if invalid pvc",
    "should not launch nodes for pod with unbound volume for volumeBindingMode immediate"."""
    result = core(*objs, with_claim(pod("db", cpu="1"), "data"), pod("web", cpu="1"))
    assert reason in ignored(result)["default/db"]
    assert [nc.pods for nc in result.nodeclaims] == [["default/web"]]


def test_deleting_claim_is_ignored():
    """suite_test.go "should not launch nodes for pod with deleting persistentVolumeClaim"."""
    claim = pvc("data", storage_class="zonal")
    claim["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    result = core(claim, storage_class("zonal"), with_claim(pod("db", cpu="1"), "data"))
    assert "is being deleted" in ignored(result)["default/db"]


def test_unbound_claim_without_class_takes_the_default_storage_class():
    """The DefaultStorageClass admission plugin fills storageClassName before Karpenter sees the claim."""
    result = core(pvc("data"), storage_class("gp3", ["test-zone-3"], default=True), with_claim(pod("db", cpu="1"), "data"))
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-3"


# --- what Kubernetes does before Karpenter sees objects ---------------------------------------------

def test_host_network_pods_claim_their_container_ports():
    """API defaulting (SetDefaults_Pod): hostNetwork pods get hostPort = containerPort, so two of them
    cannot share a node (scheduling/hostportusage.go)."""
    def hostnet(name):
        p = pod(name, cpu="100m")
        p["spec"]["hostNetwork"] = True
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
        return p
    assert len(core(hostnet("exporter-a"), hostnet("exporter-b")).nodeclaims) == 2


def test_job_pods_carry_the_job_controller_labels():
    """The Job controller labels its pods job-name / batch.kubernetes.io/job-name (and controller-uid):
    an anti-affinity on job-name keeps the Job's pods apart."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl", "namespace": "default", "uid": "u-1"},
           "spec": {"parallelism": 2, "template": {"spec": {
               "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
               "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                   {"topologyKey": HOST, "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "etl",
                                                                            "controller-uid": "u-1"}}}]}}}}}}
    result = core(job)
    assert len(result.nodeclaims) == 2 and result.unschedulable == []


def test_deployment_its_replicaset_and_pods_count_the_replicas_once():
    """Owner references: a dump holding a Deployment, its ReplicaSet and the ReplicaSet's pods is
    three replicas, not nine."""
    dep = deployment("web", replicas=3, cpu="1")
    dep["metadata"]["uid"] = "dep-1"
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "web-5d8", "namespace": "default", "uid": "rs-1",
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "dep-1"}]},
          "spec": {"replicas": 3, "template": dep["spec"]["template"]}}
    pods = [owned(pod(f"web-5d8-{s}", cpu="1"), "ReplicaSet", "web-5d8", uid="rs-1") for s in ("a", "b", "c")]
    result = core(dep, rs, *pods)
    assert result.pods == 3 and sorted(p for nc in result.nodeclaims for p in nc.pods) == [
        "default/web-5d8-a", "default/web-5d8-b", "default/web-5d8-c"]


def test_replicaset_with_part_of_its_pods_in_the_input_runs_the_rest():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "api", "namespace": "default"},
          "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "api"}},
                                               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}
    result = core(rs, owned(pod("api-x", cpu="1"), "ReplicaSet", "api"))
    assert result.pods == 3


def test_replication_controller_runs_its_pods():
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy", "namespace": "default"},
          "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "legacy"}},
                                               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}
    result = core(rc)
    assert result.pods == 2 and sorted(p for nc in result.nodeclaims for p in nc.pods) == ["default/legacy-0", "default/legacy-1"]


def test_every_kind_read_but_not_modelled_is_listed_in_a_warning():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x.y"}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    result = core(crd, crd, svc, pod("web", cpu="1"))
    assert "kinds read but not modelled, ignored: CustomResourceDefinition (2), Service (1)" in result.warnings


def test_yaml_1_1_equals_value_and_huge_crds_are_read(tmp_path):
    """kubectl (go-yaml) reads a bare `=` as a string; PyYAML's SafeLoader has no constructor for it."""
    schema = {f"field{i}": {"type": "string", "description": "x" * 200} for i in range(5000)}
    import json
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "big.example.com"},
           "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": schema}}}]}}
    path = tmp_path / "dump.yaml"
    path.write_text(json.dumps(crd) + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  op: =\n")
    docs, _ = read_documents(str(path))
    assert docs[1]["data"]["op"] == "=" and len(docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]) == 5000


# --- extended resources the AWS provider advertises (types.go computeCapacity) ---------------------

def test_pod_eni_request_lands_on_a_trunking_capable_type():
    """types.go awsPodENI: vpc.amazonaws.com/pod-eni = branch interfaces of trunking-compatible types
    (security groups for pods); t3.nano is not trunking-capable."""
    eni = {"vpc.amazonaws.com/pod-eni": "1"}
    ok = simulate([nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large", "t3.nano")]),
                   nodeclass(), pod("sg-pod", cpu="100m", resources=eni)])
    assert [nc.instance_type for nc in ok.nodeclaims] == ["m5.large"]
    nano = simulate([nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "t3.nano")]), nodeclass(),
                     pod("sg-pod", cpu="100m", resources=eni)])
    assert [u.pod for u in nano.unschedulable] == ["default/sg-pod"]


@pytest.mark.parametrize("resource,family", [("vpc.amazonaws.com/efa", "p4d"), ("aws.amazon.com/neuroncore", "inf2")])
def test_efa_and_neuroncore_requests_find_types_advertising_them(resource, family):
    """types.go efas / awsNeuronCores."""
    result = simulate([nodepool(requirements=[("karpenter.k8s.aws/instance-family", "In", "p4d", "inf2", "m5")]),
                       nodeclass(), pod("accel", cpu="1", resources={resource: "1"})])
    assert result.unschedulable == [] and result.nodeclaims[0].instance_type.startswith(family)


def test_ebs_bandwidth_label_filters_instance_types():
    """types.go computeRequirements: karpenter.k8s.aws/instance-ebs-bandwidth (from EbsInfo)."""
    result = simulate([nodepool(requirements=[("karpenter.k8s.aws/instance-family", "In", "m5")]), nodeclass(),
                       pod("io", cpu="100m", required=[[req("karpenter.k8s.aws/instance-ebs-bandwidth", "Gt", "10000")]])])
    assert result.nodeclaims[0].instance_type in ("m5.12xlarge", "m5.16xlarge", "m5.24xlarge", "m5.metal")


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=20, deadline=None)
@given(anchors=st.integers(1, 4), replicas=st.integers(1, 12), cpu=st.sampled_from(["100m", "500m", "1500m"]))
def test_bulk_placement_matches_one_by_one_for_any_mix(anchors, replicas, cpu):
    """scheduler.go add(): placing identical pods in bulk must give the pod counts per NodeClaim that
    one pod at a time (each re-sorting the NodeClaims, fewest pods first) gives."""
    anti = [term(HOST, {"role": "db"})]
    base = [pod(f"db-{i}", labels={"role": "db"}, cpu="2", anti_affinity=anti) for i in range(anchors)]
    bulk = core(*base, deployment("web", replicas=replicas, cpu=cpu))
    single = core(*base, *[pod(f"web-{i}", labels={"app": "web", "i": str(i)}, cpu=cpu) for i in range(replicas)])
    assert sorted(len(nc.pods) for nc in bulk.nodeclaims) == sorted(len(nc.pods) for nc in single.nodeclaims)
    assert len(bulk.unschedulable) == len(single.unschedulable)


def test_non_string_kind_is_a_clear_input_error():
    from provisioner import InputError
    with pytest.raises(InputError, match="kind: expected a string, got list"):
        simulate([{"apiVersion": "v1", "kind": ["Pod"], "metadata": {"name": "x"}}])


def test_csinode_attach_limit_sends_extra_volumes_to_a_new_node():
    """suite_test.go (scheduling) "should launch multiple nodes if required due to volume limits";
    existingnode.go CanAdd: volumeUsage.ExceedsLimits against the CSINode's allocatable count."""
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-1"},
               "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 3}}]}}
    sc = storage_class("gp3", ["test-zone-1", "test-zone-2", "test-zone-3"])
    sc["provisioner"] = "kubernetes.io/aws-ebs"  # in-tree name, translated to the CSI driver
    objs = [node("node-1", labels={HOST: "node-1", ZONE: "test-zone-1"}), csinode, sc]
    for i in range(2):
        objs += [pvc(f"a-{i}", storage_class="gp3"), pvc(f"b-{i}", storage_class="gp3")]
        p = pod(f"db-{i}", cpu="100m")
        p["spec"]["volumes"] = [{"name": "a", "persistentVolumeClaim": {"claimName": f"a-{i}"}},
                                {"name": "b", "persistentVolumeClaim": {"claimName": f"b-{i}"}}]
        objs.append(p)
    result = core(*objs)
    assert result.existing == {"node-1": ["default/db-0"]}
    assert [nc.pods for nc in result.nodeclaims] == [["default/db-1"]]
