"""The replay's pod reads (provisioner/replay/pod_reads.py) read a pod whose object differs from
an earlier pod of its workload in metadata.name alone by renaming that read: the same models a
read of the object gives (as load_objects and load_cluster read a Pod)."""
from hypothesis import given, settings, strategies as st

from provisioner.replay.pod_reads import PodReads, _read_pod
from tests.provisioner.replay.test_pass_cache import state_dump

SPECS = st.sampled_from([
    {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]},
    {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
     "nodeSelector": {"kubernetes.io/arch": "amd64"}},
    {"containers": [{"name": "c"}], "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]},
])
OBJECTS = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["w1", "w2"]),
                             st.sampled_from([{"app": "x"}, {"app": "y"}]), SPECS, st.sampled_from(["default", "team"])),
                   min_size=1, max_size=12)


def _object(name, labels, spec, namespace):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), "annotations": {}},
            "spec": spec, "status": {"phase": "Pending"}}


@settings(max_examples=60, deadline=None)
@given(OBJECTS)
def test_a_pod_read_from_its_workloads_earlier_read_is_the_read_of_its_object(objects):
    reads = PodReads()
    specs = []
    for k, (name, workload, labels, spec, namespace) in enumerate(objects):
        base = _object(f"{name}-{k}", labels, spec, namespace)
        read = reads.read(workload, base)
        assert state_dump(read) == state_dump(_read_pod(base))
        if read[1] is not None:
            specs.append(read[1].spec)
    assert len({id(s) for s in specs}) == len(specs)  # each pod's spec an object of its own


def test_a_pod_of_a_workload_read_before_is_not_read_again(monkeypatch):
    reads = PodReads()
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]}
    first = reads.read("w", _object("web-1", {"app": "web"}, spec, "default"))
    monkeypatch.setattr("provisioner.replay.pod_reads.load_pod", None)  # reading would fail
    second = reads.read("w", _object("web-2", {"app": "web"}, spec, "default"))
    assert (second[1].name, second[2].name) == ("default/web-2", "default/web-2")
    assert second[1].spec.key == first[1].spec.key and first[1].name == "default/web-1"
