"""`provisioner drift`: each rule follows a named upstream file (Karpenter v1.14.1)."""
from __future__ import annotations

import copy
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.cli import main
from provisioner.disruption.drift import drift
from provisioner.disruption.node_requirements import Requirement, labels_compatible, requirement_set, requirements_admit_all
from provisioner.errors import InputError


def nodepool(name="web", nodeclass="default", requirements=None, **template_spec):
    spec = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass},
            "requirements": requirements if requirements is not None else [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            **template_spec}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": {"team": "web"}}, "spec": spec},
                     "limits": {"cpu": "100"}, "weight": 10,
                     "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m",
                                    "budgets": [{"nodes": "10%"}]}}}


def nodeclass(name="default", **spec):
    base = {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@v20250101"}],
            "subnetSelectorTerms": [{"id": "subnet-a"}, {"id": "subnet-b"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "kubelet": {"maxPods": 110}}
    base.update(spec)
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": base}


def node(name, pool="web", **labels):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": "on-demand",
                                                  "kubernetes.io/arch": "amd64", "team": "web", **labels}}}


def nodeclaim(name, pool="web", node_name=None, nodeclass_name="default", annotations=None, launched="True", **labels):
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool, "kubernetes.io/arch": "amd64",
                                                  "karpenter.sh/capacity-type": "on-demand", **labels},
                         "annotations": annotations if annotations is not None else {
                             "karpenter.sh/nodepool-hash": "123", "karpenter.sh/nodepool-hash-version": "v3",
                             "karpenter.k8s.aws/ec2nodeclass-hash": "456",
                             "karpenter.k8s.aws/ec2nodeclass-hash-version": "v5"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass_name},
                     "requirements": []},
            "status": {"nodeName": node_name, "providerID": f"aws:///us-east-1a/i-{name}",
                       "conditions": [{"type": "Launched", "status": launched}]}}


def pool_entry(report, name):
    return next(p for p in report.to_dict()["nodepools"] if p["name"] == name)


def class_entry(report, name):
    return next(c for c in report.to_dict()["nodeclasses"] if c["name"] == name)


def change_pool(mutate, **kw):
    before = nodepool(**kw)
    after = copy.deepcopy(before)
    mutate(after)
    return drift([before, nodeclass()], [after, nodeclass()])


def tspec(pool):
    return pool["spec"]["template"]["spec"]


# --- NodePool static hash: kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go Hash() -----------------

@pytest.mark.parametrize("mutate, path", [
    (lambda p: p["spec"]["template"]["metadata"]["labels"].update(tier="gold"), "spec.template.metadata.labels"),
    (lambda p: p["spec"]["template"]["metadata"].update(annotations={"a": "b"}), "spec.template.metadata.annotations"),
    (lambda p: tspec(p).update(taints=[{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]),
     "spec.template.spec.taints"),
    (lambda p: tspec(p).update(startupTaints=[{"key": "init", "effect": "NoSchedule"}]), "spec.template.spec.startupTaints"),
    (lambda p: tspec(p)["nodeClassRef"].update(name="other"), "spec.template.spec.nodeClassRef.name"),
    (lambda p: tspec(p).update(expireAfter="100m"), "spec.template.spec.expireAfter"),
    (lambda p: tspec(p).update(terminationGracePeriod="1h"), "spec.template.spec.terminationGracePeriod"),
])
def test_nodepool_template_hash_fields_drift(mutate, path):
    """pkg/apis/v1/nodepool.go Hash() hashes spec.template; drift_test.go "NodePool Static Drift"
    table: Annotations, Labels, Taints, StartupTaints, NodeClassRef Name, ExpireAfter and
    TerminationGracePeriod each drift (expireAfter and terminationGracePeriod are in the v1.14 hash)."""
    report = change_pool(mutate)
    assert pool_entry(report, "web") == {"name": "web", "drift": True, "causes": [{"path": path, "kind": "hash"}],
                                         "nodes": None}


@pytest.mark.parametrize("mutate", [
    lambda p: p["spec"].update(limits={"cpu": "1000", "memory": "4Ti"}),
    lambda p: p["spec"].update(weight=90),
    lambda p: p["spec"].update(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h",
                                           "budgets": [{"nodes": "0", "schedule": "@daily", "duration": "10m"}]}),
    lambda p: tspec(p)["requirements"][1].update(values=["amd64", "arm64"]),
    lambda p: tspec(p)["requirements"][1].update(minValues=1),
    lambda p: tspec(p).update(taints=[]),
    lambda p: tspec(p).update(expireAfter="720h"),
    lambda p: p["metadata"].update(labels={"owner": "someone"}),
])
def test_nodepool_changes_outside_hash_do_not_drift(mutate):
    """nodepool.go: limits, weight and disruption sit outside spec.template; requirements carry
    hash:"ignore" (and widening them keeps every node compatible, drift.go areRequirementsDrifted);
    expireAfter defaults to 720h in the CRD, so writing the default is no change."""
    report = change_pool(mutate)
    assert pool_entry(report, "web") == {"name": "web", "drift": False, "causes": [], "nodes": None}
    assert report.to_dict()["summary"] == {"nodepools_drifted": 0, "nodes_replaced": None}


def test_nodepool_list_order_and_equal_durations_do_not_drift():
    """Hash() uses SlicesAsSets (taint order is no change) and hashes time.Duration, not the raw
    string (NillableDuration.Raw is hash:"ignore" in pkg/apis/v1/duration.go): 60m equals 1h."""
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]
    before = nodepool(taints=taints, expireAfter="1h", terminationGracePeriod="90m")
    after = nodepool(taints=[{"key": "b", "effect": "NoExecute"}, {"key": "a", "effect": "NoSchedule"}],
                     expireAfter="60m", terminationGracePeriod="1h30m")
    report = drift([before], [after])
    assert pool_entry(report, "web")["drift"] is False


def test_expire_after_never_drifts_from_the_default():
    """duration.go: "Never" is a nil duration; the CRD default is 720h, so Never vs unset drifts."""
    report = drift([nodepool()], [nodepool(expireAfter="Never")])
    assert pool_entry(report, "web")["causes"] == [{"path": "spec.template.spec.expireAfter", "kind": "hash"}]


# --- Requirement drift: pkg/controllers/nodeclaim/disruption/drift.go areRequirementsDrifted -----

def test_narrowed_requirement_drifts_only_nodes_whose_labels_no_longer_fit():
    """drift.go areRequirementsDrifted per NodeClaim labels; drift_test.go "should return drifted
    only on NodeClaims that are drifted from an updated nodePool"."""
    wide = [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux", "windows"]}]
    narrow = [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    snapshot = [node("linux-1", **{"kubernetes.io/os": "linux"}), node("windows-1", **{"kubernetes.io/os": "windows"}),
                node("windows-2", **{"kubernetes.io/os": "windows"})]
    report = drift([nodepool(requirements=wide)], [nodepool(requirements=narrow)], snapshot)
    assert pool_entry(report, "web") == {"name": "web", "drift": True, "nodes": 2, "causes": [
        {"path": "spec.template.spec.requirements", "kind": "requirements"}]}
    assert report.replaced["web"] == ["windows-1", "windows-2"]
    assert report.to_dict()["summary"] == {"nodepools_drifted": 1, "nodes_replaced": 2}


@pytest.mark.parametrize("old, new, labels, drifted", [
    ([("karpenter.sh/capacity-type", "In", ["on-demand"])], [("karpenter.sh/capacity-type", "In", ["spot"])],
     {"karpenter.sh/capacity-type": "on-demand"}, True),
    ([("kubernetes.io/os", "In", ["linux"])], [("kubernetes.io/os", "In", ["linux"]), ("kubernetes.io/arch", "In", ["amd64"])],
     {"kubernetes.io/os": "linux"}, True),
    ([("kubernetes.io/os", "In", ["linux"])], [("kubernetes.io/os", "Exists", [])], {"kubernetes.io/os": "linux"}, False),
    ([("kubernetes.io/os", "In", ["linux"])], [("kubernetes.io/os", "DoesNotExist", [])], {"kubernetes.io/os": "linux"}, True),
    ([("test-label", "Gt", ["2"])], [("test-label", "Gt", ["10"])], {"test-label": "5"}, True),
    ([("test-label", "Lt", ["5"])], [("test-label", "Lt", ["1"])], {"test-label": "2"}, True),
    ([], [("custom", "NotIn", ["x"])], {}, False),
])
def test_requirement_drift_table_matches_upstream(old, new, labels, drifted):
    """drift_test.go "NodeRequirement Drift" entries (updated, added, Exists, DoesNotExist, Gt, Lt),
    and pkg/scheduling/requirements.go Compatible: an absent label passes only NotIn/DoesNotExist."""
    assert labels_compatible(labels, requirement_set(old)) is True
    assert labels_compatible(labels, requirement_set(new)) is (not drifted)


def test_requirement_drift_without_snapshot_when_not_a_widening():
    """Without nodes, a requirement change drifts when some node the old requirements allowed
    would fail the new ones (drift.go decides per NodeClaim; we answer for every possible one)."""
    spot = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]
    only_spot = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    assert pool_entry(drift([nodepool(requirements=spot)], [nodepool(requirements=only_spot)]), "web")["causes"] == [
        {"path": "spec.template.spec.requirements", "kind": "requirements"}]
    assert pool_entry(drift([nodepool(requirements=only_spot)], [nodepool(requirements=spot)]), "web")["drift"] is False


def test_requirement_on_a_template_label_does_not_drift():
    """Every node carries the template labels (nodepool.go ToNodeClaim), so requiring the value the
    template sets admits every existing node."""
    added = [{"key": "team", "operator": "In", "values": ["web"]}]
    assert pool_entry(drift([nodepool(requirements=[])], [nodepool(requirements=added)]), "web")["drift"] is False


reqs = st.lists(st.tuples(st.sampled_from(["k", "kubernetes.io/arch"]),
                          st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
                          st.lists(st.sampled_from(["1", "3", "5", "a"]), min_size=1, max_size=3)), max_size=3)


def _valid(rs):
    return [(k, o, [str(int(v[0]) if v[0].isdigit() else 2)] if o in ("Gt", "Lt") else v) for k, o, v in rs]


@settings(max_examples=150, deadline=None)
@given(reqs, reqs, st.dictionaries(st.sampled_from(["k", "kubernetes.io/arch"]), st.sampled_from(["1", "3", "5", "a"])))
def test_widening_never_drifts_a_compatible_node(old, new, labels):
    """Property: when the requirements admit every node the old ones did (no drift without a
    snapshot), no node compatible with the old requirements is requirement-drifted (drift.go)."""
    old, new = requirement_set(_valid(old)), requirement_set(_valid(new))
    if "kubernetes.io/arch" not in labels:
        labels = {**labels, "kubernetes.io/arch": "a"}  # Karpenter always sets arch
    if requirements_admit_all(old, new, {}) and labels_compatible(labels, old):
        assert labels_compatible(labels, new)


def test_requirement_gt_is_inclusive_after_canonicalisation():
    """pkg/scheduling/requirement.go: Gt N becomes Gte N+1, Lt N becomes Lte N-1; bounds reject non-integers."""
    gt = Requirement.of("karpenter.k8s.aws/instance-cpu", "Gt", ["2"])
    assert (gt.has("3"), gt.has("2"), gt.has("x"), gt.operator()) == (True, False, False, "Exists")


# --- With a snapshot: static drift per NodeClaim annotations (drift.go areStaticFieldsDrifted) ---

def test_hash_drift_replaces_every_node_of_the_pool_and_none_elsewhere():
    """drift.go areStaticFieldsDrifted marks every NodeClaim of the NodePool whose hash changed."""
    snapshot = [node("a-1"), node("a-2"), node("other-1", pool="other")]
    before = [nodepool(), nodepool("other"), nodeclass()]
    after = [nodepool(taints=[{"key": "x", "effect": "NoSchedule"}]), nodepool("other"), nodeclass()]
    report = drift(before, after, snapshot)
    assert (pool_entry(report, "web")["nodes"], pool_entry(report, "other")["nodes"]) == (2, 0)


def test_nodeclaim_without_hash_annotations_is_not_statically_drifted():
    """drift.go areStaticFieldsDrifted returns "" when the NodeClaim lacks the nodepool-hash or
    its version (drift_test.go "should not return drifted if karpenter.sh/nodepool-hash annotation
    is not present on the NodeClaim"); a differing hash version does not drift either."""
    claims = [nodeclaim("annotated", node_name="n1"), nodeclaim("bare", annotations={}),
              nodeclaim("old-version", annotations={"karpenter.sh/nodepool-hash": "1",
                                                    "karpenter.sh/nodepool-hash-version": "v2"})]
    before = nodepool()
    before["metadata"]["annotations"] = {"karpenter.sh/nodepool-hash-version": "v3"}
    after = nodepool(taints=[{"key": "x", "effect": "NoSchedule"}])
    report = drift([before], [after], claims + [node("n1")])
    assert report.replaced["web"] == ["n1"]


def test_nodeclaims_not_launched_or_deleting_are_not_counted():
    """drift.go Reconcile: a NodeClaim that is not Launched has no Drifted condition; a deleting
    node is already on its way out."""
    deleting = node("gone")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    snapshot = [nodeclaim("pending", launched="False"), deleting, node("live")]
    report = drift([nodepool()], [nodepool(expireAfter="24h")], snapshot)
    assert report.replaced["web"] == ["live"]


# --- Removal: NodeClaims are owned by their NodePool; EC2NodeClass finalizer waits --------------

def test_removed_nodepool_replaces_all_its_nodes():
    """scheduling/nodeclaimtemplate.go sets an ownerReference from each NodeClaim to its NodePool:
    deleting the NodePool deletes all of its nodes."""
    report = drift([nodepool(), nodeclass()], [nodeclass()], [node("a"), node("b")])
    assert pool_entry(report, "web") == {"name": "web", "drift": True, "causes": [{"path": "", "kind": "removed"}],
                                         "nodes": 2}


def test_removed_nodeclass_replaces_no_nodes():
    """aws nodeclass/controller.go finalize waits while NodeClaims use the EC2NodeClass, and
    cloudprovider.go IsDrifted returns no drift when the node class cannot be resolved."""
    report = drift([nodepool(), nodeclass()], [nodepool()], [node("a")])
    assert class_entry(report, "default") == {"name": "default", "drift": True,
                                              "causes": [{"path": "", "kind": "removed"}]}
    assert pool_entry(report, "web") == {"name": "web", "drift": False, "causes": [], "nodes": 0}


def test_new_objects_do_not_drift():
    report = drift([], [nodepool(), nodeclass()], [])
    assert pool_entry(report, "web") == {"name": "web", "drift": False, "causes": [], "nodes": 0}
    assert class_entry(report, "default")["drift"] is False


# --- EC2NodeClass: aws pkg/apis/v1/ec2nodeclass.go Hash() and pkg/cloudprovider/drift.go --------

@pytest.mark.parametrize("change, path", [
    ({"kubelet": {"maxPods": 58}}, "spec.kubelet.maxPods"),
    ({"userData": "echo hi"}, "spec.userData"),
    ({"tags": {"team": "web"}}, "spec.tags"),
    ({"metadataOptions": {"httpPutResponseHopLimit": 2}}, "spec.metadataOptions.httpPutResponseHopLimit"),
    ({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}]}, "spec.blockDeviceMappings"),
    ({"detailedMonitoring": False}, "spec.detailedMonitoring"),
    ({"role": "OtherRole"}, "spec.role"),
    ({"amiFamily": "Custom"}, "spec.amiFamily"),
    ({"placementGroupSelector": {"name": "pg"}}, "spec.placementGroupSelector"),
])
def test_nodeclass_hashed_fields_drift_as_hash(change, path):
    """ec2nodeclass.go Hash(): every spec field without hash:"ignore" counts (pointer fields such
    as detailedMonitoring count even when false), and the AMI family as AMIFamily() resolves it."""
    report = drift([nodeclass()], [nodeclass(**change)])
    assert class_entry(report, "default")["causes"] == [{"path": path, "kind": "hash"}]


@pytest.mark.parametrize("change", [
    {"ipPrefixCount": 4},
    {"amiFamily": "AL2023"},  # what the alias resolves to already
    {"metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required"}},  # CRD defaults
    {"subnetSelectorTerms": [{"id": "subnet-b"}, {"id": "subnet-a"}, {"id": "subnet-c"}]},
    {"capacityReservationSelectorTerms": [{"id": "cr-1"}]},
])
def test_nodeclass_changes_that_do_not_drift(change):
    """ec2nodeclass.go: ipPrefixCount and amiFamily are hash:"ignore" (the resolved family is what
    counts); metadataOptions defaults come from the CRD; cloudprovider/drift.go isSubnetDrifted only
    checks the instance's subnet is still among the node class's, so adding subnets keeps it; a
    node outside any reservation never has capacity reservation drift."""
    assert class_entry(drift([nodeclass()], [nodeclass(**change)]), "default") == {
        "name": "default", "drift": False, "causes": []}


@pytest.mark.parametrize("change, kind, path", [
    ({"amiSelectorTerms": [{"alias": "al2023@v20250201"}]}, "ami", "spec.amiSelectorTerms"),
    ({"subnetSelectorTerms": [{"id": "subnet-a"}]}, "subnets", "spec.subnetSelectorTerms"),
    ({"securityGroupSelectorTerms": [{"id": "sg-1"}, {"id": "sg-2"}]}, "securitygroups",
     "spec.securityGroupSelectorTerms"),
])
def test_nodeclass_dynamic_drift_from_selector_terms(change, kind, path):
    """cloudprovider/drift.go: isAMIDrifted (node's image not among status.amis), isSubnetDrifted
    (instance subnet not among status.subnets), areSecurityGroupsDrifted (the instance's groups must
    equal status.securityGroups: adding one drifts too)."""
    assert class_entry(drift([nodeclass()], [nodeclass(**change)]), "default")["causes"] == [
        {"path": path, "kind": kind}]


def test_nodeclass_drift_propagates_to_its_pools_with_kind_nodeclass():
    """cloudprovider.go IsDrifted resolves the NodePool's node class and drifts its NodeClaims when
    the node class drifted: the NodePool lists kind nodeclass, only nodes of that class go."""
    before = [nodepool(), nodepool("gpu", nodeclass="gpu"), nodeclass(), nodeclass("gpu")]
    after = [nodepool(), nodepool("gpu", nodeclass="gpu"), nodeclass(amiSelectorTerms=[{"alias": "al2023@latest"}]),
             nodeclass("gpu")]
    report = drift(before, after, [node("w1"), node("w2"), node("g1", pool="gpu")])
    assert pool_entry(report, "web") == {"name": "web", "drift": True, "nodes": 2,
                                         "causes": [{"path": "spec.amiSelectorTerms", "kind": "nodeclass"}]}
    assert pool_entry(report, "gpu")["drift"] is False
    assert report.to_dict()["summary"] == {"nodepools_drifted": 1, "nodes_replaced": 2}


def test_node_follows_its_nodeclaims_nodeclassref():
    """A node belongs to a node class through its NodeClaim's nodeClassRef (else its pool's)."""
    before = [nodepool(), nodeclass(), nodeclass("other")]
    after = [nodepool(), nodeclass(kubelet={"maxPods": 20}), nodeclass("other")]
    claims = [nodeclaim("c1", node_name="n1"), nodeclaim("c2", node_name="n2", nodeclass_name="other")]
    report = drift(before, after, claims + [node("n1"), node("n2")])
    assert report.replaced["web"] == ["n1"]


def test_capacity_reservation_drift_counts_only_nodes_in_dropped_reservations():
    """cloudprovider/drift.go isCapacityReservationDrifted: only an instance launched into a
    reservation the node class no longer selects drifts (reported on the NodePool, kind nodeclass)."""
    before = [nodepool(), nodeclass(capacityReservationSelectorTerms=[{"id": "cr-1"}, {"id": "cr-2"}])]
    after = [nodepool(), nodeclass(capacityReservationSelectorTerms=[{"id": "cr-2"}])]
    reserved = {"karpenter.sh/capacity-type": "reserved"}
    snapshot = [node("r1", **reserved, **{"karpenter.k8s.aws/capacity-reservation-id": "cr-1"}),
                node("r2", **reserved, **{"karpenter.k8s.aws/capacity-reservation-id": "cr-2"}), node("od")]
    report = drift(before, after, snapshot)
    assert pool_entry(report, "web")["causes"] == [{"path": "spec.capacityReservationSelectorTerms", "kind": "nodeclass"}]
    assert report.replaced["web"] == ["r1"]


# --- The command ------------------------------------------------------------------------------

def _write(path, docs):
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_cli_json_shape_is_exact(tmp_path, capsys):
    before = _write(tmp_path / "before.yaml", [nodepool(), nodeclass(), {"kind": "ConfigMap", "apiVersion": "v1"}])
    after = _write(tmp_path / "after.yaml", [nodepool(taints=[{"key": "x", "effect": "NoSchedule"}]), nodeclass()])
    snap = _write(tmp_path / "snap.yaml", [{"apiVersion": "v1", "kind": "List", "items": [node("n1"), node("n2")]}])
    assert main(["drift", "--before", before, "--after", after, "-f", snap, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "nodepools": [{"name": "web", "drift": True, "causes": [{"path": "spec.template.spec.taints", "kind": "hash"}],
                       "nodes": 2}],
        "nodeclasses": [{"name": "default", "drift": False, "causes": []}],
        "summary": {"nodepools_drifted": 1, "nodes_replaced": 2}}


def test_cli_table_names_pools_causes_and_summary(tmp_path, capsys):
    before = _write(tmp_path / "b.yaml", [nodepool(), nodeclass()])
    after = _write(tmp_path / "a.yaml", [nodepool(expireAfter="24h"), nodeclass()])
    assert main(["drift", "--before", before, "--after", after]) == 0
    out = capsys.readouterr().out
    assert "web       yes" in out and "hash spec.template.spec.expireAfter" in out
    assert "Summary: 1 of 1 NodePool(s) drift, nodes replaced: unknown" in out


@pytest.mark.parametrize("doc, message", [
    (nodepool(requirements=[{"key": "k", "operator": "Bigger", "values": ["1"]}]),
     "NodePool \"web\": spec.template.spec.requirements[0].operator: 'Bigger' is not one of ['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']"),
    (nodepool(expireAfter="5 days"), "spec.template.spec.expireAfter: '5 days' does not match '^(([0-9]+(s|m|h))+|Never)$'"),
    ({"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": "old"}}, "apiVersion"),
    ({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {}}, "metadata.name: '' is not a DNS-1123 subdomain"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, doc, message):
    bad = _write(tmp_path / "bad.yaml", [doc])
    good = _write(tmp_path / "good.yaml", [nodepool()])
    assert main(["drift", "--before", good, "--after", bad]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "bad.yaml" in err


def test_cli_missing_file_and_malformed_yaml_exit_2(tmp_path, capsys):
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: NodePool\n  bad: [")
    assert main(["drift", "--before", str(tmp_path / "nope"), "--after", str(broken)]) == 2
    assert main(["drift", "--before", str(broken), "--after", str(broken)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "no such file or directory" in err[0] and "malformed YAML" in err[1]


def test_duplicate_nodepool_is_an_error():
    with pytest.raises(InputError, match="defined twice"):
        drift([nodepool(), nodepool()], [])


json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "1h", "In", "Never"]),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["key", "operator", "values", "name", "labels", "taints", "effect",
                                                "nodeClassRef", "expireAfter", "kubelet", "status", "spec"]),
                               inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(json_values, json_values, json_values, json_values)
@pytest.mark.slow
def test_any_input_gives_a_report_or_an_input_error(template_spec, nodeclass_spec, node_status, metadata):
    """No input may produce a traceback: every malformed object is an InputError (exit 2)."""
    pool = nodepool()
    pool["spec"]["template"]["spec"] = template_spec
    klass = nodeclass()
    klass["spec"] = nodeclass_spec
    claim = nodeclaim("c")
    claim["status"] = node_status
    bad_node = node("n")
    bad_node["spec"] = node_status
    pool["spec"]["template"]["metadata"] = metadata
    claim["metadata"]["annotations"] = metadata
    try:
        drift([nodepool(), nodeclass()], [pool, klass], [claim, bad_node])
    except InputError:
        pass
