"""components/config/migrate: older Karpenter objects to v1, field by field.

The specification is upstream's code and guides:
- aws/karpenter-provider-aws tools/karpenter-convert/pkg/convert/convert.go (v0.32-v0.37:
  convertProvisioner, convertNodeTemplate, convertProvider), pkg/utils/nodeclass/nodeclass.go and
  pkg/apis/v1alpha5/provisioner.go SetDefaults at v0.32.10;
- kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go New (v0.32.10) and
  pkg/apis/v1/nodepool_conversion.go ConvertFrom (v1.0.8);
- aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass_conversion.go ConvertFrom (v1.0.8);
- website/content/en/v1.0/upgrading/v1-migration.md and website/content/en/v0.32/upgrading/v1beta1-migration.md.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.imports import Document, import_documents
from components.config.migrate import migrate_documents
from components.config.migrate.common import Log, seconds
from components.config.migrate.nodeclass import selector_terms
from components.roundtrip import roundtrip
from provisioner.disruption.snapshot import go_duration


def provisioner(**spec):
    return {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "default"}, "spec": spec}


def v1beta1_pool(name="default", disruption=None, node_class="default", **template_spec):
    return {"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"nodeClassRef": {"apiVersion": "karpenter.k8s.aws/v1beta1",
                                                            "kind": "EC2NodeClass", "name": node_class},
                                           **template_spec}},
                     **({"disruption": disruption} if disruption is not None else {})}}


def v1beta1_class(name="default", **spec):
    return {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"role": "KarpenterNodeRole-x", **spec}}


def migrate(*bodies):
    result = migrate_documents([Document("in.yaml", f"document {i + 1}", b) for i, b in enumerate(bodies)])
    return result, {(d.body["kind"], d.body["metadata"]["name"]): d.body for d in result.converted}


def lines(result) -> str:
    log = result.log
    return "\n".join(log.changes + log.losses + log.notes + [str(e) for e in log.errors])


def test_ttl_seconds_after_empty_becomes_when_empty_with_consolidate_after():
    """nodepool.go New: ttlSecondsAfterEmpty -> WhenEmpty + consolidateAfter (v1beta1-migration.md "TTLSecondsAfterEmpty")."""
    result, objects = migrate(provisioner(ttlSecondsAfterEmpty=30, providerRef={"name": "default"}))
    assert objects[("NodePool", "default")]["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty",
                                                                     "consolidateAfter": "30s"}
    assert "spec.ttlSecondsAfterEmpty: 30 written as consolidationPolicy: WhenEmpty, consolidateAfter: 30s" in lines(result)


def test_consolidation_enabled_becomes_when_empty_or_underutilized_after_0s():
    """nodepool.go New (WhenUnderutilized), then nodepool_conversion.go ConvertFrom (renamed, consolidateAfter 0)."""
    _, objects = migrate(provisioner(consolidation={"enabled": True}, providerRef={"name": "default"}))
    assert objects[("NodePool", "default")]["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}


def test_a_provisioner_without_consolidation_keeps_never_consolidating():
    result, objects = migrate(provisioner(providerRef={"name": "default"}))
    assert objects[("NodePool", "default")]["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty",
                                                                     "consolidateAfter": "Never"}
    assert "never removed empty or underused nodes" in lines(result)


def test_consolidation_and_ttl_seconds_after_empty_together_are_refused():
    result, _ = migrate(provisioner(consolidation={"enabled": True}, ttlSecondsAfterEmpty=30))
    assert [str(e) for e in result.log.errors] == [
        "in.yaml: document 1: spec.ttlSecondsAfterEmpty: cannot be set with consolidation.enabled: true (v1alpha5 validation)"]


def test_ttl_seconds_until_expired_becomes_expire_after_in_the_template():
    """nodepool.go New: ttlSecondsUntilExpired -> disruption.expireAfter; v1 moves it to template.spec."""
    _, objects = migrate(provisioner(ttlSecondsUntilExpired=2592000, providerRef={"name": "default"}))
    assert objects[("NodePool", "default")]["spec"]["template"]["spec"]["expireAfter"] == "720h"


@given(st.integers(0, (2**63 - 1) // 10**9))
def test_seconds_are_written_as_a_duration_karpenter_reads_back(value):
    assert go_duration(seconds(value, Document("f", "d", {}), "p", Log())) == value


def test_seconds_beyond_go_durations_are_refused():
    """nodepool.go New: lo.Must(time.ParseDuration(fmt.Sprintf("%ds", ttl))) panics above int64 nanoseconds."""
    log = Log()
    assert seconds(9223372037, Document("f", "document 1", {}), "spec.ttlSecondsUntilExpired", log) is None
    assert str(log.errors[0]) == ("f: document 1: spec.ttlSecondsUntilExpired: 9223372037 seconds is above the longest "
                                  "duration Karpenter reads (9223372036 seconds, Go's time.Duration limit of about 292 years)")


def test_errors_in_a_converted_provisioner_name_the_keys_the_user_wrote(tmp_path):
    """Validation runs on the v1 object; its key paths are mapped back (spec.template.spec.requirements -> spec.requirements)."""
    body = provisioner(requirements=[{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["four"]}],
                       labels={"karpenter.sh/nodepool": "x"}, provider={"tags": {"": "x"}})
    result = migrate_documents([Document("in.yaml", "document 1", body)])
    imported = import_documents(result.documents, "web")
    # The requirement's refusal is the CRD's CEL rule on the whole list (spec.template.spec.requirements).
    assert sorted(e.path for e in imported.errors) == ["document 1: spec.labels", "document 1: spec.provider.tags",
                                                       "document 1: spec.requirements"]


def test_provisioner_defaults_are_written_out_and_labels_move_to_the_template():
    """provisioner.go SetDefaults (v1alpha5 admission) as karpenter-convert writes them; v1beta1-migration.md
    "spec.template.spec.requirements Defaults Dropped"; labels/annotations under spec.template.metadata."""
    _, objects = migrate(provisioner(labels={"team": "a"}, annotations={"karpenter.sh/do-not-consolidate": "true", "x": "y"},
                                     requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                    "values": ["m5.large"]}],
                                     taints=[{"key": "t", "effect": "NoSchedule"}], weight=10,
                                     limits={"resources": {"cpu": "100"}}, providerRef={"name": "default"}))
    spec = objects[("NodePool", "default")]["spec"]
    assert spec["template"]["metadata"] == {"labels": {"team": "a"},
                                            "annotations": {"karpenter.sh/do-not-disrupt": "true", "x": "y"}}
    assert [(r["key"], r["values"]) for r in spec["template"]["spec"]["requirements"]] == [
        ("node.kubernetes.io/instance-type", ["m5.large"]), ("kubernetes.io/os", ["linux"]),
        ("kubernetes.io/arch", ["amd64"]), ("karpenter.sh/capacity-type", ["on-demand"])]
    assert spec["template"]["spec"]["taints"] == [{"key": "t", "effect": "NoSchedule"}]
    assert (spec["weight"], spec["limits"]) == (10, {"cpu": "100"})
    assert spec["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                        "name": "default"}


def test_inline_provider_becomes_an_ec2nodeclass_named_after_the_provisioner():
    """convert.go convertProvider + convertNodeTemplate: AL2 when no amiFamily, the node role placeholder;
    ec2nodeclass_conversion.go ConvertFrom: the family alone becomes the alias <family>@latest."""
    result, objects = migrate(provisioner(provider={"instanceProfile": "KarpenterNodeInstanceProfile-my-cluster",
                                                    "subnetSelector": {"karpenter.sh/discovery": "c"},
                                                    "tags": {"karpenter.sh/managed-by": "c", "team": "a"}}))
    node_class = objects[("EC2NodeClass", "default")]["spec"]
    assert node_class == {"subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                          "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "$CLUSTER_NAME"}}],
                          "tags": {"team": "a"}, "role": "$KARPENTER_NODE_ROLE",
                          "amiSelectorTerms": [{"alias": "al2@latest"}]}
    assert "aws iam get-instance-profile --instance-profile-name KarpenterNodeInstanceProfile-my-cluster" in lines(result)
    assert objects[("NodePool", "default")]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"


def test_selector_maps_become_terms_as_karpenter_convert_splits_them():
    """nodeclass.go NewAMISelectorTerms: comma lists are alternatives; aws::ids / aws::name / aws::owners are fields."""
    terms = selector_terms({"aws::name": "a,b", "aws::owners": "amazon", "env": "x"}, Document("f", "d", {}), "p",
                           {"aws::ids": "id", "aws::name": "name", "aws::owners": "owner"}, Log())
    assert terms == [{"name": "a", "owner": "amazon", "tags": {"env": "x"}},
                     {"name": "b", "owner": "amazon", "tags": {"env": "x"}}]
    log = Log()
    assert selector_terms({"aws-ids": "subnet-1, subnet-2", "env": "x"}, Document("f", "d", {}), "p",
                          {"aws-ids": "id"}, log) == [{"id": "subnet-1"}, {"id": "subnet-2"}]
    assert "a v1 selector term with an id takes no other field" in log.losses[0]


def test_launch_template_cannot_be_carried_and_says_what_to_do():
    result, _ = migrate({"apiVersion": "karpenter.k8s.aws/v1alpha1", "kind": "AWSNodeTemplate", "metadata": {"name": "lt"},
                         "spec": {"launchTemplate": "my-template", "subnetSelector": {"a": "b"},
                                  "securityGroupSelector": {"a": "b"}}})
    (loss,) = result.log.losses
    assert loss.startswith("in.yaml: document 1: spec.launchTemplate: 'my-template' not carried: Karpenter removed "
                           "unmanaged launch templates in v1beta1")
    assert "amiSelectorTerms" in loss and "userData" in loss


def test_v1beta1_nodepool_policy_expiry_and_node_class_ref():
    """nodepool_conversion.go ConvertFrom: WhenUnderutilized -> WhenEmptyOrUnderutilized + 0s, expireAfter
    into the template, nodeClassRef.apiVersion -> group; budgets carried."""
    _, objects = migrate(v1beta1_pool(disruption={"consolidationPolicy": "WhenUnderutilized", "expireAfter": "168h",
                                                  "budgets": [{"nodes": "10%"}]}))
    spec = objects[("NodePool", "default")]["spec"]
    assert spec["disruption"] == {"budgets": [{"nodes": "10%"}], "consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "consolidateAfter": "0s"}
    assert spec["template"]["spec"] == {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                         "name": "default"}, "expireAfter": "168h"}


def test_v1beta1_template_resources_are_not_carried_and_said_so():
    """The v1beta1 NodeClaimSpec had `resources`; v1 has none (karpenter-convert drops an empty one)."""
    result, objects = migrate(v1beta1_pool(resources={"requests": {"cpu": "1"}}))
    assert "resources" not in objects[("NodePool", "default")]["spec"]["template"]["spec"]
    assert result.log.losses[0].startswith("in.yaml: document 1: spec.template.spec.resources: {'requests': {'cpu': '1'}} "
                                           "not carried")


def test_when_idle_is_read_as_when_empty_and_said_so():
    result, objects = migrate(v1beta1_pool(disruption={"consolidationPolicy": "WhenIdle", "consolidateAfter": "30s"}))
    assert objects[("NodePool", "default")]["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty",
                                                                     "consolidateAfter": "30s"}
    assert "'WhenIdle' is not a Karpenter policy" in lines(result)


def test_kubelet_moves_to_the_node_class():
    """v1-migration.md "Kubelet Configuration Migration" (the webhooks leave it to the user)."""
    result, objects = migrate(v1beta1_pool(kubelet={"maxPods": 10}), v1beta1_class(amiFamily="AL2023"))
    assert objects[("EC2NodeClass", "default")]["spec"]["kubelet"] == {"maxPods": 10}
    assert "kubelet" not in objects[("NodePool", "default")]["spec"]["template"]["spec"]
    assert "spec.template.spec.kubelet: moved to EC2NodeClass 'default' spec.kubelet" in lines(result)


def test_pools_sharing_a_node_class_with_different_kubelets_get_a_copy_each():
    """v1-migration.md: "you will need to create a separate EC2NodeClass for unique set of kubelet configurations"."""
    _, objects = migrate(v1beta1_pool("nodepool-a", kubelet={"maxPods": 10}, node_class="nodeclass"),
                         v1beta1_pool("nodepool-b", kubelet={"maxPods": 20}, node_class="nodeclass"),
                         v1beta1_class("nodeclass", amiFamily="AL2023"))
    assert objects[("EC2NodeClass", "nodeclass")]["spec"]["kubelet"] == {"maxPods": 10}
    assert objects[("EC2NodeClass", "nodeclass-nodepool-b")]["spec"]["kubelet"] == {"maxPods": 20}
    assert objects[("NodePool", "nodepool-b")]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "nodeclass-nodepool-b"
    assert objects[("NodePool", "nodepool-a")]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "nodeclass"


def test_kubelet_for_a_node_class_outside_the_input_is_a_loss_with_what_to_do():
    result, _ = migrate(v1beta1_pool(kubelet={"maxPods": 10}, node_class="shared"))
    (loss,) = result.log.losses
    assert "set nodeClasses.shared.kubelet to {'maxPods': 10} in the stack" in loss


@pytest.mark.parametrize("spec, expected", [
    ({"amiFamily": "AL2"}, {"amiSelectorTerms": [{"alias": "al2@latest"}]}),
    ({"amiFamily": "Bottlerocket"}, {"amiSelectorTerms": [{"alias": "bottlerocket@latest"}]}),
    ({"amiFamily": "AL2023", "amiSelectorTerms": [{"id": "ami-1"}]},
     {"amiFamily": "AL2023", "amiSelectorTerms": [{"id": "ami-1"}]}),
    ({"amiFamily": "Ubuntu", "amiSelectorTerms": [{"id": "ami-1"}]},
     {"amiFamily": "AL2", "amiSelectorTerms": [{"id": "ami-1"}],
      "blockDeviceMappings": [{"deviceName": "/dev/sda1", "rootVolume": True,
                               "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"}}]}),
    ({"amiFamily": "Custom", "amiSelectorTerms": [{"name": "my-ami"}]},
     {"amiFamily": "Custom", "amiSelectorTerms": [{"name": "my-ami"}]}),
])
def test_v1beta1_ami_family_and_terms_as_the_conversion_webhook_writes_them(spec, expected):
    """ec2nodeclass_conversion.go ConvertFrom (v1.0.8): the switch on amiFamily."""
    _, objects = migrate(v1beta1_class(**spec))
    converted = objects[("EC2NodeClass", "default")]["spec"]
    assert {k: v for k, v in converted.items() if k != "role"} == expected


def test_ubuntu_without_an_ami_selector_is_refused_with_what_to_do():
    result, _ = migrate(v1beta1_class(amiFamily="Ubuntu"))
    (error,) = result.log.errors
    assert error.path == "document 1: spec.amiFamily" and "add amiSelectorTerms naming the Ubuntu AMI" in error.message


def test_workloads_with_removed_annotations_get_a_note():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"template": {"metadata": {"annotations": {"karpenter.sh/do-not-evict": "true"}}}}}
    result, _ = migrate(deployment)
    assert result.log.notes == [("in.yaml: document 1: spec.template.metadata.annotations.karpenter.sh/do-not-evict: "
                                 "Karpenter v1 ignores this annotation: rename it to karpenter.sh/do-not-disrupt in your "
                                 "manifests (the v1 migration guide, \"Deprecated Annotations\")")]


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 40), st.sampled_from(["", "x", "AL2", "Ubuntu", "30s"]))
_KEYS = st.sampled_from(["spec", "provider", "providerRef", "name", "ttlSecondsAfterEmpty", "consolidation", "enabled",
                         "limits", "resources", "kubelet", "kubeletConfiguration", "template", "disruption",
                         "consolidationPolicy", "nodeClassRef", "amiFamily", "amiSelectorTerms", "subnetSelector",
                         "launchTemplate", "metadata", "labels", "annotations", "requirements"])
_TREES = st.recursive(_SCALARS, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(_KEYS, c, max_size=4)),
                      max_leaves=14)


@settings(max_examples=200, deadline=None)
@given(spec=_TREES, kind=st.sampled_from([("karpenter.sh/v1alpha5", "Provisioner"),
                                          ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"),
                                          ("karpenter.sh/v1beta1", "NodePool"),
                                          ("karpenter.k8s.aws/v1beta1", "EC2NodeClass")]))
def test_no_input_makes_the_migration_crash(spec, kind):
    body = {"apiVersion": kind[0], "kind": kind[1], "metadata": {"name": "x"}, "spec": spec}
    result = migrate_documents([Document("f.yaml", "document 1", body)])
    assert result.log.errors or result.converted
    imported = import_documents(result.documents, "web")  # and the import of what it made
    if not (result.log.errors or imported.errors):
        assert roundtrip(result.documents, imported, "web").losses == []
