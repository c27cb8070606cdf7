"""The trace file: schema, validation, bounded refusal (docs/replay.md "Trace schema")."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from provisioner.cli import main
from provisioner.errors import InputError
from provisioner.replay.trace import MAX_EVENTS, parse_trace

from tests.provisioner.replay.replay_builders import base, deployment, replay, write, write_trace


def _fails(capsys, tmp_path, events, *args, until="1h"):
    code, out, err = replay(capsys, tmp_path, base(), events, *args, until=until)
    assert code == 2 and out is None
    assert "Traceback" not in err
    return err


def test_missing_name_is_refused_naming_the_file_and_key_path(tmp_path, capsys):
    events = [{"at": "0s", "apply": deployment()}] * 3 + [{"at": "1m", "scale": {"kind": "Deployment", "replicas": 2}}]
    err = _fails(capsys, tmp_path, events)
    assert "trace.yaml" in err and "events[3].scale.name: missing" in err


def test_time_going_backwards_is_refused_at_the_event(tmp_path, capsys):
    err = _fails(capsys, tmp_path, [{"at": "10m", "apply": deployment()}, {"at": "5m", "delete": {
        "kind": "Deployment", "name": "web"}}])
    assert "events[1].at" in err and "non-decreasing" in err


@pytest.mark.parametrize("event, path", [
    ({"at": "soon", "apply": {}}, "events[0].at"),
    ({"at": "1m"}, "events[0]"),
    ({"at": "1m", "apply": {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "x"}}}, "events[0].apply.kind"),
    ({"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": -1}}, "events[0].scale.replicas"),
    ({"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 1}, "runFor": "1m"}, "events[0].runFor"),
    ({"at": "1m", "interrupt": {"instanceType": "m5.large", "fraction": 2}}, "events[0].interrupt.fraction"),
    ({"at": "1m", "delete": {"kind": "NodePool", "name": "default"}}, "events[0].delete.kind"),
    ({"at": "1m", "bogus": 1}, "events[0].bogus"),
])
def test_malformed_events_name_their_key_path(tmp_path, capsys, event, path):
    assert f"{path}:" in _fails(capsys, tmp_path, [event])


def test_an_event_for_an_object_that_does_not_exist_is_refused(tmp_path, capsys):
    err = _fails(capsys, tmp_path, [{"at": "1m", "scale": {"kind": "Deployment", "name": "ghost", "replicas": 1}}])
    assert "events[0].scale.name" in err and "no Deployment default/ghost exists" in err
    err = _fails(capsys, tmp_path, [{"at": "1m", "interrupt": {"node": "nowhere"}}])
    assert "events[0].interrupt.node" in err


def test_a_job_from_the_trace_must_say_how_long_it_runs(tmp_path, capsys):
    from tests.provisioner.replay.replay_builders import job
    err = _fails(capsys, tmp_path, [{"at": "0s", "apply": job()}])
    assert "events[0].apply" in err and "runFor" in err


def test_a_trace_over_the_event_ceiling_is_refused_before_replaying(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text("events:\n" + "- {at: 0s}\n" * (MAX_EVENTS + 1))
    code = main(["replay", "-f", write(tmp_path, "c.yaml", *base()), "--trace", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "huge.yaml" in err and "refused" in err


def test_a_ten_million_event_file_is_refused_by_its_size_without_reading_it(tmp_path, capsys):
    path = tmp_path / "ten-million.json"
    with open(path, "wb") as handle:  # sparse: 10 million events of ~30 bytes
        handle.truncate(300 * 2**20)
    code = main(["replay", "-f", write(tmp_path, "c.yaml", *base()), "--trace", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "ten-million.json" in err and "MiB; refused" in err


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["at", "apply", "scale", "delete", "interrupt", "runFor", "kind", "name",
                                                "replicas", "node", "metadata", "events"]), inner, max_size=4),
                           max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.just("events"), st.lists(json_values, max_size=4)) | json_values)
def test_any_document_is_a_trace_or_an_input_error_never_a_crash(doc):
    try:
        trace = parse_trace(doc, "t.json")
    except InputError as exc:
        assert str(exc).startswith("t.json")
    else:
        assert [e.index for e in trace.events] == list(range(len(trace.events)))


def test_equal_times_keep_file_order_and_json_traces_read_alike(tmp_path):
    data = {"events": [{"at": "1m", "apply": deployment()},
                       {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 3}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    from provisioner.replay.trace import load_trace
    trace = load_trace(str(path))
    assert [e.action for e in trace.events] == ["apply", "scale"]
    assert trace.events[1].body == {"kind": "Deployment", "namespace": "default", "name": "web", "replicas": 3}
    assert load_trace(write_trace(tmp_path, data["events"])).events == trace.events


def test_a_runaway_replay_is_refused_not_run_for_hours(monkeypatch, tmp_path, capsys):
    """A CronJob every minute over a long --until: a bounded refusal (the clock's event ceiling)."""
    from provisioner.replay import engine
    from tests.provisioner.replay.replay_builders import cronjob
    monkeypatch.setattr(engine, "MAX_STEPS", 2_000)
    events = [{"at": "0s", "apply": cronjob(schedule="* * * * *"), "runFor": "30s"}]
    code, out, err = replay(capsys, tmp_path, base(), events, until="8760h")
    assert code == 2 and out is None and "trace.yaml" in err and "refused" in err
    code, out, err = replay(capsys, tmp_path, base(), events, until="9000h")
    assert code == 2 and "--until must be between 0s and 8784h" in err
