"""Trace sources: `trace --synthetic` and `trace --from-audit-log` (EKS audit events as JSON lines,
or CloudWatch Logs records holding them in `message`)."""
import json

import yaml

from provisioner.cli import main
from provisioner.replay.sources import from_audit_log, synthetic
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import deployment, job


def _audit(verb, resource, name, at, group="apps", sub=None, request=None, response=None, code=200, level="RequestResponse"):
    ref = {"resource": resource, "namespace": "default", "name": name, "apiGroup": group, "apiVersion": "v1"}
    if sub:
        ref["subresource"] = sub
    ev = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": f"{verb}-{name}-{at}",
          "stage": "ResponseComplete", "verb": verb, "objectRef": ref, "responseStatus": {"code": code},
          "requestReceivedTimestamp": f"2026-02-01T10:{at}Z", "stageTimestamp": f"2026-02-01T10:{at}Z"}
    if request is not None:
        ev["requestObject"] = request
    if response is not None:
        ev["responseObject"] = response
    return ev


def test_synthetic_trace_is_valid_deterministic_and_diurnal():
    a, b = synthetic(days=2, services=3, pods=60, seed=4), synthetic(days=2, services=3, pods=60, seed=4)
    assert a == b and a != synthetic(days=2, services=3, pods=60, seed=5)
    trace = parse_trace(a, "synthetic")
    scales = [e for e in trace.events if e.action == "scale" and e.body["name"] == "svc-0"]
    assert len(scales) == 47  # hourly for two days
    replicas = [e.body["replicas"] for e in scales]
    assert max(replicas) > 1.4 * min(replicas)  # a daily curve, not flat
    assert sum(1 for e in trace.events if e.action == "apply" and e.body["kind"] == "Job") == 2 * 2 * 5


def test_trace_command_writes_a_trace_replay_reads(tmp_path, capsys):
    out = tmp_path / "t.yaml"
    assert main(["trace", "--synthetic", "--days", "1", "--services", "2", "--pods", "10", "--out", str(out)]) == 0
    assert parse_trace(yaml.safe_load(out.read_text()), str(out)).events


def test_audit_log_becomes_apply_scale_and_delete_events(tmp_path, capsys):
    dep = deployment(replicas=3)
    dep["metadata"]["resourceVersion"] = "12"
    done = job()
    done["status"] = {"startTime": "2026-02-01T10:05:00Z", "completionTime": "2026-02-01T10:12:30Z"}
    lines = [
        _audit("create", "deployments", "web", "00:00", request=dep, response=dep),
        _audit("patch", "deployments", "web", "01:00", sub="scale", response={"spec": {"replicas": 5}}),
        _audit("create", "deployments", "meta", "01:30", level="Metadata"),
        _audit("create", "jobs", "etl", "05:00", group="batch", request=job()),
        _audit("update", "jobs", "etl", "12:30", group="batch", sub="status", response=done),
        _audit("delete", "deployments", "web", "20:00"),
        _audit("delete", "deployments", "older", "21:00"),  # created before the log: dropped
        _audit("create", "deployments", "denied", "22:00", request=dep, code=403),
    ]
    path = tmp_path / "audit.jsonl"
    # the second line as CloudWatch Logs exports it: the audit event is the record's message
    records = [json.dumps(lines[0]), json.dumps({"timestamp": 1, "message": json.dumps(lines[1])})]
    path.write_text("\n".join(records + [json.dumps(line) for line in lines[2:]]) + "\n")
    out = tmp_path / "trace.yaml"
    assert main(["trace", "--from-audit-log", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped without object 1" in err and "skipped failed 1" in err and "skipped unknown object 1" in err
    events = yaml.safe_load(out.read_text())["events"]
    assert [(e["at"], next(k for k in ("apply", "scale", "delete") if k in e)) for e in events] == [
        ("0s", "apply"), ("1m", "scale"), ("5m", "apply"), ("20m", "delete")]
    assert events[0]["apply"]["metadata"] == {"name": "web", "namespace": "default"}  # no resourceVersion
    assert events[1]["scale"] == {"kind": "Deployment", "namespace": "default", "name": "web", "replicas": 5}
    assert events[2]["runFor"] == "7m30s"  # completionTime - startTime from the Job's status update
    parse_trace({"events": events}, "audit")


def test_malformed_audit_lines_are_refused_with_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "Event"}\nnot json\n')
    assert main(["trace", "--from-audit-log", str(path)]) == 2
    assert f"{path}:2" in capsys.readouterr().err


def test_jobs_a_cronjob_created_are_left_to_the_replayed_cronjob():
    owned = job(name="cron-123")
    owned["metadata"]["ownerReferences"] = [{"kind": "CronJob", "name": "cron"}]
    lines = [json.dumps(_audit("create", "jobs", "cron-123", "00:00", group="batch", request=owned))]
    trace, counts = from_audit_log([("a.jsonl", lines)])
    assert trace == {"events": []} and counts["skipped_owned"] == 1
