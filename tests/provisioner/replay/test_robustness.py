"""Any well-formed trace replays or is refused with an InputError: never a traceback or a hang."""
from hypothesis import HealthCheck, given, settings, strategies as st

from provisioner.errors import InputError
from provisioner.replay.engine import Options, Replay
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import random_event, base

NAMES = st.sampled_from(["web", "api", "etl", "ghost"])
TIMES = st.integers(min_value=0, max_value=7200)


def _event(*drawn):
    return random_event(*drawn, cpus=("100m", "1", "3", "70"))  # 70 CPUs: a pod no type holds


events = st.lists(st.tuples(st.sampled_from(["deploy", "job", "cron", "pdb", "scale", "delete", "interrupt-node",
                                             "interrupt-type"]), NAMES, st.integers(0, 6), TIMES,
                            st.integers(1, 3600)), max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_random_traces_replay_or_are_refused(items):
    items = sorted(items, key=lambda i: i[3])
    trace = parse_trace({"events": [_event(*i) for i in items]}, "t.yaml")
    try:
        out = Replay(base(), None, trace, Options(until=3 * 3600.0, seed=1)).run()
    except InputError as exc:
        assert str(exc).startswith("t.yaml")
        return
    assert out["summary"]["duration_s"] == 10800.0
    assert out["summary"]["pods_evicted"] == sum(d["pods_evicted"] for d in out["disruptions"])
    assert all(e["pending_pods"] >= 0 and e["nodes"] >= 0 for e in out["timeline"])
