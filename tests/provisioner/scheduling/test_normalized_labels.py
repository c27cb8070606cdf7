"""Karpenter compares aliased label keys as the well-known key they stand for (NormalizedLabels):
core's beta labels (kubernetes-sigs/karpenter pkg/apis/v1/labels.go) and the AWS provider's EBS CSI
zone key, registered in aws/karpenter-provider-aws pkg/operator/operator.go (v1.14.1, line 81:
`topology.ebs.csi.aws.com/zone` -> `topology.kubernetes.io/zone`). A volume provisioned by the EBS
CSI driver carries its zone under that key, so it must pin the NodeClaim's zone like any other."""
from kubefacts.labels import EBS_CSI_ZONE, NORMALIZED_BY_RELEASE, SUPPORTED_RELEASES, ZONE, normalize
from tests.provisioner.prov_builders import fake_type, nodepool, pod, req, run_core
from provisioner.scheduling.requirements import Requirement

TYPES = [fake_type("small", "2", "8Gi"), fake_type("large", "8", "32Gi")]


def _pv_claim(zone_key: str, zone: str) -> list:
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
              "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                           {"key": zone_key, "operator": "In", "values": [zone]}]}]}}}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
             "spec": {"volumeName": "pv-1"}}
    consumer = pod("db", cpu="1")
    consumer["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    return [volume, claim, consumer]


def test_ebs_csi_zone_is_normalized_to_the_zone_in_every_supported_release():
    assert all(NORMALIZED_BY_RELEASE[r][EBS_CSI_ZONE] == ZONE for r in SUPPORTED_RELEASES)
    assert normalize(EBS_CSI_ZONE) == ZONE
    assert Requirement.of(EBS_CSI_ZONE, "In", ["test-zone-2"]).key == ZONE


def test_volume_bound_by_the_ebs_csi_zone_pins_the_nodeclaim_zone():
    """volumetopology.go getPersistentVolumeRequirements, with the provider's normalized key."""
    result = run_core(*_pv_claim(EBS_CSI_ZONE, "test-zone-3"), types=TYPES)
    assert result.unschedulable == []
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-3"


def test_storage_class_topology_on_the_ebs_csi_zone_pins_an_unbound_claim():
    storage = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
               "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
               "allowedTopologies": [{"matchLabelExpressions": [{"key": EBS_CSI_ZONE, "values": ["test-zone-2"]}]}]}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
             "spec": {"storageClassName": "zonal"}}
    consumer = pod("db", cpu="1")
    consumer["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    result = run_core(storage, claim, consumer, types=TYPES)
    assert result.unschedulable == []
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-2"


def test_pod_and_nodepool_requirements_on_the_ebs_csi_zone_select_the_zone():
    selected = pod("web", cpu="1", node_selector={EBS_CSI_ZONE: "test-zone-3"})
    pool = nodepool(requirements=[req(EBS_CSI_ZONE, "In", "test-zone-2", "test-zone-3")])
    result = run_core(pool, selected, types=TYPES)
    assert result.unschedulable == []
    assert result.nodeclaims[0].labels[ZONE] == "test-zone-3"
