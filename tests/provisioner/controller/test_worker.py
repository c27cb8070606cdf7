"""Plans off the control loop (provisioner.controller.worker): a plan that never ends neither
holds /readyz back nor keeps SIGTERM waiting, and is stopped at its budget. Every wait is bounded
(TIMEOUT); worker processes are real (spawned), so each test ends its worker."""
from __future__ import annotations

import queue
import threading
import time

import pytest

from provisioner.controller.controller import Controller
from provisioner.controller.http import Health
from provisioner.controller.kinds import WATCHED
from provisioner.controller.loop import run_loop
from provisioner.controller.metrics import Metrics
from provisioner.controller.reflector import Replace
from provisioner.controller.worker import PlanFailed, PlanTimeout, PlanWorker, Stopped
from provisioner.errors import InputError

TIMEOUT = 30.0
TARGETS = {name: f"tests.provisioner.worker_targets:{name}" for name in ("echo", "forever", "refuse", "crash")}


@pytest.fixture
def worker():
    beats = []
    made = PlanWorker(TARGETS, budget=TIMEOUT, beat=lambda: beats.append(time.monotonic()))
    made.beats = beats
    try:
        yield made
    finally:
        made.close()


def test_a_call_returns_the_result_and_the_catalog_is_sent_once(worker):
    assert worker.call("echo", 1, catalog={"types": 3}, catalog_token="a") == {"value": 1, "catalog": {"types": 3}}
    # Same token: the worker keeps the catalog it holds (nothing resent).
    assert worker.call("echo", 2, catalog={"ignored": True}, catalog_token="a") == {"value": 2, "catalog": {"types": 3}}
    assert worker.call("echo", 3, catalog={"types": 4}, catalog_token="b")["catalog"] == {"types": 4}


def test_a_call_over_its_budget_is_stopped_and_the_next_call_gets_a_new_worker(worker):
    worker.budget = 0.5
    started = time.monotonic()
    with pytest.raises(PlanTimeout, match="forever ran over its budget of 0.5 s"):
        worker.call("forever")
    assert time.monotonic() - started < TIMEOUT
    worker.budget = TIMEOUT
    assert worker.call("echo", "again")["value"] == "again"
    assert worker.beats  # the loop's liveness was kept while it waited


def test_errors_come_back_as_the_function_raised_them(worker):
    with pytest.raises(InputError) as err:
        worker.call("refuse")
    assert (err.value.obj, err.value.path, err.value.message) == ('Pod "default/x"', "spec", "bad pod")
    with pytest.raises(PlanFailed, match="ZeroDivisionError: division by zero"):
        worker.call("crash")


def test_stop_while_waiting_ends_the_call_at_once(worker):
    threading.Timer(0.5, worker.stop.set).start()
    started = time.monotonic()
    with pytest.raises(Stopped):
        worker.call("forever")
    assert time.monotonic() - started < TIMEOUT


def _listed_controller(consolidate):
    controller = Controller(plan=lambda objects: {"nodeclaims": [], "unschedulable": [], "summary": {}},
                            metrics=Metrics(), recorder=None, consolidate=consolidate, consolidation_interval=60.0)
    messages: queue.Queue = queue.Queue()
    for kind in WATCHED:
        messages.put(Replace(kind, [], "1"))
    return controller, messages


def test_the_advisor_is_ready_and_alive_and_honours_stop_while_a_plan_never_ends(worker):
    """The first consolidation what-if ran before /readyz turned 200, so a what-if that never ends
    (a budget schedule that never fires) kept the advisor unready for ever while the liveness probe
    restarted it into the same stall, and SIGTERM waited for it. Now readiness is published before
    any plan, the loop beats while the worker plans, and `stop` ends the loop at once."""
    controller, messages = _listed_controller(lambda objects, now: worker.call("forever"))
    now = [1000.0]
    health = Health(lambda: now[0], stale_after=120.0)
    stop = worker.stop
    loop = threading.Thread(target=run_loop, args=(controller, messages, stop, health, time.monotonic), daemon=True)
    loop.start()
    deadline = time.monotonic() + TIMEOUT
    while not (health.ready and len(worker.beats) > 5) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert health.ready  # /readyz 200 while the what-if runs
    assert loop.is_alive() and health.alive()
    stop.set()  # SIGTERM
    loop.join(TIMEOUT)
    assert not loop.is_alive()


def test_a_what_if_over_its_budget_is_counted_as_a_timeout_and_the_loop_goes_on(worker):
    worker.budget = 0.3
    controller, messages = _listed_controller(lambda objects, now: worker.call("forever"))
    health = Health(time.monotonic)
    stop = worker.stop
    loop = threading.Thread(target=run_loop, args=(controller, messages, stop, health, time.monotonic),
                            kwargs={"heartbeat": 0.05}, daemon=True)
    loop.start()
    runs = controller.metrics.consolidation.runs
    deadline = time.monotonic() + TIMEOUT
    while runs.labels(result="timeout")._value.get() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runs.labels(result="timeout")._value.get() == 1
    stop.set()
    loop.join(TIMEOUT)
    assert not loop.is_alive()
