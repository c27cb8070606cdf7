"""Object dicts to models: pod requests, controllers, ignored kinds and input errors."""
import pytest

from provisioner import InputError, load_objects
from provisioner.manifests import read_documents, read_paths
from kubefacts.quantity import milli as parse

from tests.provisioner.prov_builders import daemonset, deployment, nodeclass, nodepool, pod, req


def requests_of(obj):
    return load_objects([obj]).pods[0].spec.requests


def test_pod_requests_sum_containers_and_count_one_pod():
    obj = pod(cpu="1")
    obj["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}})
    assert requests_of(obj) == {"cpu": 1500, "memory": parse("1Gi"), "pods": 1000}


def test_pod_requests_take_largest_init_container_when_larger():
    obj = pod(cpu="1", memory="1Gi", init=[{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}}])
    assert requests_of(obj) == {"cpu": 3000, "memory": parse("1Gi"), "pods": 1000}


def test_pod_requests_add_sidecars_to_containers_and_later_init_containers():
    obj = pod(cpu="1", init=[
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "1200m"}}},
    ])
    # max(containers 1 + sidecar 0.5, init 1.2 + sidecar 0.5) = 1.7
    assert requests_of(obj)["cpu"] == 1700


def test_pod_requests_default_to_limits_when_missing():
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    assert requests_of(obj) == {"cpu": 2000, "memory": parse("1Gi"), "pods": 1000}


def test_pod_requests_include_pod_overhead():
    obj = pod(cpu="1")
    obj["spec"]["overhead"] = {"cpu": "250m"}
    assert requests_of(obj)["cpu"] == 1250


def test_pod_level_resources_override_container_sum():
    obj = pod(cpu="1", memory="1Gi")
    obj["spec"]["resources"] = {"requests": {"cpu": "3"}}
    assert requests_of(obj)["cpu"] == 3000 and requests_of(obj)["memory"] == parse("1Gi")


def test_controller_pods_are_named_namespace_controller_index():
    names = [p.name for p in load_objects([deployment("web", replicas=3, namespace="shop")]).pods]
    assert names == ["shop/web-0", "shop/web-1", "shop/web-2"]


def test_controller_replicas_share_one_spec():
    pods = load_objects([deployment("web", replicas=2)]).pods
    assert pods[0].spec is pods[1].spec


@pytest.mark.parametrize("kind,api,count_field,expected", [
    ("StatefulSet", "apps/v1", "replicas", 4), ("ReplicaSet", "apps/v1", "replicas", 4), ("Job", "batch/v1", "parallelism", 4)])
def test_controller_kinds_expand_to_pods(kind, api, count_field, expected):
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x"},
           "spec": {count_field: 4, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert len(load_objects([obj]).pods) == expected


def test_job_runs_no_more_pods_than_remaining_completions():
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 5, "completions": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert len(load_objects([obj]).pods) == 2


def test_bound_pod_on_known_node_is_existing_usage_not_pending():
    node_obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}}
    inputs = load_objects([node_obj, pod("bound", cpu="1", node_name="n1"), pod("pending", cpu="1")])
    assert [p.name for p in inputs.bound_pods] == ["default/bound"] and [p.name for p in inputs.pods] == ["default/pending"]


def test_terminal_pods_are_ignored():
    obj = pod(cpu="1")
    obj["status"] = {"phase": "Succeeded"}
    assert load_objects([obj]).pods == []


def test_other_kinds_and_kindless_documents_are_ignored():
    objs = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}},
            {"chart": "karpenter", "version": "1.14.1", "namespace": "kube-system", "values": {}},
            None, "text", deployment("web")]
    inputs = load_objects(objs)
    assert len(inputs.pods) == 1 and inputs.nodepools == []


def test_list_kind_is_expanded():
    inputs = load_objects([{"apiVersion": "v1", "kind": "List", "items": [deployment("a"), deployment("b")]}])
    assert [p.name for p in inputs.pods] == ["default/a-0", "default/b-0"]


def test_daemonset_gets_controller_tolerations():
    ds = load_objects([daemonset(cpu="100m")]).daemonsets[0]
    assert any(t.key == "node.kubernetes.io/not-ready" for t in ds.spec.tolerations)


def test_nodepool_without_node_class_ref_is_rejected_with_key_path():
    obj = nodepool("web")
    del obj["spec"]["template"]["spec"]["nodeClassRef"]
    with pytest.raises(InputError) as err:
        load_objects([obj], origins=["pools.yaml:3 (document 1)"])
    assert str(err.value) == ('pools.yaml:3 (document 1): NodePool "web": spec.template.spec.nodeClassRef: '
                              'Required value (the karpenter.sh/v1 NodePool schema)')


def test_nodepool_unknown_operator_names_object_and_key_path():
    with pytest.raises(InputError) as err:
        load_objects([nodepool("web", requirements=[req("kubernetes.io/arch", "Equals", "amd64")])])
    assert ('NodePool "web": spec.template.spec.requirements[0].operator: \'Equals\' is not one of '
            "['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']") in str(err.value)


def test_pod_unknown_node_affinity_operator_names_key_path():
    obj = deployment("api", required=[[req("kubernetes.io/arch", "Gte", "1")]])
    with pytest.raises(InputError) as err:
        load_objects([obj])
    assert ("spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator") in str(err.value)


def test_invalid_quantity_names_key_path():
    with pytest.raises(InputError) as err:
        load_objects([pod("p", cpu="two")])
    assert "spec.containers[0].resources.requests.cpu: 'two' is not a Kubernetes quantity" in str(err.value)


def test_nodepool_restricted_label_is_rejected():
    with pytest.raises(InputError, match="restricted"):
        load_objects([nodepool("web", labels={"karpenter.sh/custom": "x"})])


def test_duplicate_nodepool_names_are_rejected():
    with pytest.raises(InputError, match="duplicate NodePool 'web'"):
        load_objects([nodepool("web"), nodepool("web")])


def test_node_without_allocatable_is_rejected():
    with pytest.raises(InputError, match="status.allocatable"):
        load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {}}])


def test_nodeclass_alias_sets_ami_family_and_root_volume():
    nc = load_objects([nodeclass("gpu", amiSelectorTerms=[{"alias": "bottlerocket@latest"}], blockDeviceMappings=[
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}}])]).nodeclasses["gpu"]
    assert (nc.ami_family, nc.root_volume) == ("Bottlerocket", parse("100Gi"))


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Pod\nmetadata:\n  name: [unclosed\n")
    with pytest.raises(InputError) as err:
        read_documents(str(path))
    assert str(err.value).startswith(f"{path}:4:") and "malformed YAML" in str(err.value)


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        read_paths([str(tmp_path / "nope")])


def test_folder_documents_carry_file_and_line_origins(tmp_path):
    (tmp_path / "a.yaml").write_text("kind: ConfigMap\n---\nkind: Pod\nmetadata: {name: p}\n")
    docs, origins = read_paths([str(tmp_path)])
    assert origins == [f"{tmp_path}/a.yaml:1 (document 1)", f"{tmp_path}/a.yaml:3 (document 2)"]


def test_object_without_name_is_rejected():
    obj = pod()
    del obj["metadata"]["name"]
    with pytest.raises(InputError, match=r'Pod "default/\(unnamed\)": metadata.name: missing'):
        load_objects([obj])
