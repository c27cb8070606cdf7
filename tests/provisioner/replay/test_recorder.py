"""`serve --record-trace`: the advisor's watch messages become a trace `replay` reads."""
import yaml

from provisioner.controller.kinds import NODE, NODEPOOL, PDB, POD
from provisioner.controller.reflector import Change, Replace
from provisioner.replay.engine import Options, Replay
from provisioner.replay.recorder import TraceRecorder
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import nodeclass, nodepool


def _pod(name, node=None, phase="Pending"):
    spec = {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": "u",
                                                            "resourceVersion": "7", "labels": {"app": "web"}},
            "spec": spec, "status": {"phase": phase}}


def test_watch_messages_are_recorded_as_a_trace_that_replays(tmp_path):
    now = [1000.0]
    path = tmp_path / "trace.yaml"
    recorder = TraceRecorder(str(path), lambda: now[0])
    seen = []
    sink = recorder.wrap(seen.append)
    sink(Replace(NODEPOOL, [nodepool()], "1"))
    sink(Replace(POD, [_pod("a", node="ip-1")], "1"))
    sink(Replace(NODE, [{"metadata": {"name": "ip-1"}}], "1"))  # nodes are left to the replay
    now[0] = 1060.0
    sink(Change(POD, "ADDED", _pod("b")))
    sink(Change(POD, "MODIFIED", _pod("b", node="ip-1", phase="Running")))  # a binding: nothing new
    now[0] = 1090.5
    sink(Change(POD, "MODIFIED", _pod("a", node="ip-1", phase="Succeeded")))
    sink(Change(PDB, "ADDED", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
    recorder.flush()
    assert len(seen) == 7  # every message still reaches the controller
    events = yaml.safe_load(path.read_text())["events"]
    assert [(e["at"], next(k for k in ("apply", "delete") if k in e)) for e in events] == [
        ("0.000s", "apply"), ("0.000s", "apply"), ("60.000s", "apply"), ("90.500s", "delete"), ("90.500s", "apply")]
    assert events[1]["apply"]["metadata"] == {"name": "a", "namespace": "default", "labels": {"app": "web"}}
    assert "nodeName" not in events[1]["apply"]["spec"]
    trace = parse_trace({"events": events}, str(path))
    out = Replay([nodeclass(), nodepool()], None, trace, Options(until=600.0)).run()
    assert out["summary"]["nodes_launched"] >= 1 and out["timeline"][-1]["pending_pods"] == 0
