"""A replay on two processes (replay/twin.py, disruption/share.py) gives the output of one: each
pass's single-node consolidation candidates are split between the processes and the earliest
command of both wins, as upstream's SingleNodeConsolidation.ComputeCommands takes the first
candidate in order that gives one (pkg/controllers/disruption/singlenodeconsolidation.go). A twin
that dies or falls out of step is parted from, and the parent finishes alone with the same output."""
from __future__ import annotations

import json
import os

import pytest

from provisioner.disruption import singlenodeconsolidation
from provisioner.replay import bench, twin
from provisioner.replay.engine import Options, replay
from provisioner.replay.parallel import replay_all
from provisioner.replay.trace import parse_trace

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the twin is a forked process")


def _run(pods: int, days: float, seed: int, processes: int) -> str:
    trace = parse_trace(bench.trace_for(pods, days, max(1, int(1000 * days / 7)), seed=seed), "bench")
    result = replay(bench.cluster(), None, trace, Options(until=days * 86400, seed=seed, processes=processes))
    return json.dumps(result, sort_keys=True)


@pytest.fixture(autouse=True)
def forked(monkeypatch) -> list:
    """The twins' process ids, recorded as they are forked."""
    pids: list = []
    fork = twin.Twin.fork.__func__

    def recording(cls):
        made = fork(cls)
        if made is not None and made.rank == 0:
            pids.append(made.pid)
        return made

    monkeypatch.setattr(twin.Twin, "fork", classmethod(recording))
    return pids


def _no_child_left(pids: list) -> bool:
    """Every twin forked has ended and been reaped (waitpid no longer knows it)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return bool(pids)


@pytest.mark.parametrize("pods, days, seed", [(150, 0.1, 0), (400, 0.15, 3)])
def test_two_processes_replay_what_one_does(pods, days, seed, forked):
    shared = []
    original = singlenodeconsolidation.SingleNodeConsolidation._shared

    def spy(self, share, eligible):
        shared.append(len(eligible))
        return original(self, share, eligible)

    singlenodeconsolidation.SingleNodeConsolidation._shared = spy
    try:
        two = _run(pods, days, seed, 2)
    finally:
        singlenodeconsolidation.SingleNodeConsolidation._shared = original
    assert sum(n > 1 for n in shared) > 5  # passes whose candidates were really split
    assert two == _run(pods, days, seed, 1)
    assert _no_child_left(forked)


@pytest.mark.parametrize("fault", ["dies", "out of step"])
def test_a_twin_that_dies_or_falls_out_of_step_is_parted_from_and_the_output_is_unchanged(monkeypatch, fault, forked):
    original = twin.Twin.agree

    def faulty(self, names, first):
        if self.rank == 1 and self.passes >= 3:
            if fault == "dies":
                os._exit(0)
            names = names + ("not-a-candidate",)  # a checksum the parent does not expect
        return original(self, names, first)

    monkeypatch.setattr(twin.Twin, "agree", faulty)
    parted = []
    apart = twin.Twin.apart

    def recording(self, why):
        if self.rank == 0:
            parted.append(why)
        return apart(self, why)

    monkeypatch.setattr(twin.Twin, "apart", recording)
    assert _run(150, 0.1, 0, 2) == _run(150, 0.1, 0, 1)
    assert parted and ("gone" in parted[0] or "out of step" in parted[0] or "pipe" in parted[0])
    assert _no_child_left(forked)


def test_one_long_replay_given_two_workers_runs_on_two_processes(monkeypatch):
    """replay_all: a replay of a day or more with workers to spare takes a twin; a shorter one, or
    one without a spare worker, does not."""
    seen = []
    monkeypatch.setattr("provisioner.replay.parallel._one", lambda job: seen.append(job[3].processes) or {})
    trace = parse_trace(bench.trace_for(50, 0.01, 1), "bench")
    day, hour = (bench.cluster(), None, trace, Options(until=86400)), (bench.cluster(), None, trace, Options(until=3600))
    replay_all([day], workers=2)
    replay_all([day], workers=1)
    replay_all([hour], workers=2)
    assert seen == [2, 1, 1]


def test_bench_reports_the_twins_cpu_seconds_and_memory_apart(capsys, forked):
    assert bench.main(["--pods", "60", "--days", "0.02", "--processes", "2", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["processes"] == 2 and row["twin_cpu_s"] > 0 and row["twin_peak_mib"] > 0
    assert _no_child_left(forked)


_KILLED_PARENT = """
import os, sys
from provisioner.replay import bench, twin
from provisioner.replay.engine import Options, replay
from provisioner.replay.trace import parse_trace
fork = twin.Twin.fork.__func__
def recording(cls):
    made = fork(cls)
    if made.rank == 0:
        print(made.pid, flush=True)
    return made
twin.Twin.fork = classmethod(recording)
trace = parse_trace(bench.trace_for(2000, 7, 1000), "bench")  # a minute or more alone
replay(bench.cluster(), None, trace, Options(until=7 * 86400, processes=2))
"""


@pytest.mark.slow
def test_a_twin_ends_with_its_parent_when_the_parent_is_killed():
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT], stdout=subprocess.PIPE, text=True)
    try:
        twin_pid = int(proc.stdout.readline())
        time.sleep(0.5)
        os.kill(twin_pid, 0)  # running
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(twin_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(twin_pid, signal.SIGKILL)
            pytest.fail("the twin outlived its parent")
    finally:
        if proc.poll() is None:
            proc.kill()
