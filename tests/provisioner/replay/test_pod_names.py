"""Each controller's pods have names of their own, as Kubernetes gives them (a ReplicaSet's pods
`<name>-<hash>-<suffix>`, a Job's `<name>-<suffix>`): a Deployment and a Job named alike in one
namespace keep all their pods in the replay."""
from __future__ import annotations

from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import deployment, job, nodeclass, nodepool


def test_a_deployment_and_a_job_named_alike_keep_all_their_pods():
    trace = parse_trace({"events": [
        {"at": "0s", "apply": deployment("api", replicas=2, cpu="250m")},
        {"at": "30s", "apply": job("api", parallelism=2, completions=2, cpu="250m"), "runFor": "1h"},
    ]}, "t.yaml")
    r = Replay([nodeclass(), nodepool()], None, trace, Options(until=600.0))
    r.run()
    owners = sorted(p.owner[1] for p in r.cluster.pods.values() if p.owner)
    assert owners == ["Job", "Job", "ReplicaSet", "ReplicaSet"]
    assert len(r.cluster.pods) == 4
    for node in r.cluster.nodes.values():
        assert node.pods <= set(r.cluster.pods)  # every name a node holds is a pod of the cluster
