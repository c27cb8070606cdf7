"""The imperative shell: reflector threads fill a queue, one loop drains it into the controller."""
from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Iterable

from .controller import Controller
from .http import Health
from .kinds import Kind
from .kube import KubeApi
from .reflector import Reflector
from .worker import Stopped

log = logging.getLogger(__name__)

# The loop wakes at least this often, so /healthz sees it alive even when nothing happens.
HEARTBEAT = 5.0
# At most this many messages between two chances to plan, so a busy cluster cannot starve it.
DRAIN_LIMIT = 5000


def start_reflectors(api: KubeApi, kinds: Iterable[Kind], sink: Callable, stop: threading.Event,
                     **options) -> list[threading.Thread]:
    threads = []
    for kind in kinds:
        reflector = Reflector(kind, api, sink, **options)
        thread = threading.Thread(target=reflector.run, args=(stop,), name=f"watch-{kind.plural}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def run_loop(controller: Controller, messages: "queue.Queue", stop: threading.Event, health: Health,
             clock: Callable[[], float], heartbeat: float = HEARTBEAT) -> None:
    """Until `stop`: take messages (waiting at most until the next batch is due), publish
    readiness, then plan if due. A plan run by a PlanWorker raises Stopped when `stop` is set
    meanwhile: the loop then ends at once (SIGTERM is not kept waiting for a plan)."""
    try:
        _loop(controller, messages, stop, health, clock, heartbeat)
    except Stopped:
        log.info("stopped while planning")


def _loop(controller, messages, stop, health, clock, heartbeat) -> None:
    while not stop.is_set():
        now = clock()
        wait = controller.wait(now)
        timeout = heartbeat if wait is None else min(heartbeat, wait)
        try:
            message = messages.get(timeout=timeout)
        except queue.Empty:
            message = None
        # Drain whatever else arrived: a relist of 10 000 pods is one message each, and we
        # want them all in the cache before deciding whether a batch is due.
        drained = 0
        while message is not None:
            controller.handle(message, clock())
            drained += 1
            try:
                message = messages.get_nowait() if drained < DRAIN_LIMIT else None
            except queue.Empty:
                message = None
        # Ready as soon as every kind is listed, before any plan: a plan (run in the worker, with
        # its budget) must never hold /readyz back, or the kubelet restarts the advisor into it.
        health.ready = controller.ready
        health.beat()
        controller.tick(clock())
        health.beat()
