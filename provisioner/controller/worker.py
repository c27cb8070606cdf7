"""Plans off the control loop, with a time budget: one long-lived worker process.

A plan or a consolidation what-if can cost minutes on a hostile cluster (a budget schedule that
never fires, tens of thousands of pods). Run on the loop, it kept /readyz at 503 until the first
one ended, let /healthz go stale (the kubelet then restarted the advisor into the same plan) and
left SIGTERM waiting. Here the loop hands the work to a worker process and waits for it in short
slices: it keeps beating (liveness), it stops at once when told to (SIGTERM), and a plan over its
budget is ended by killing the worker (a thread could not be stopped), counted as a timeout and
started afresh on the next call. The worker imports the scheduling core once and keeps the catalog
it was last sent, so a call carries only the cluster's objects.
"""
from __future__ import annotations

import importlib
import logging
import multiprocessing
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

log = logging.getLogger(__name__)

SLICE = 0.1  # seconds between two looks at `stop` while waiting for the worker


class PlanTimeout(Exception):
    """The call ran over its budget; the worker was killed."""


class PlanFailed(Exception):
    """The call raised in the worker (anything but InputError); the message names the exception."""


class Stopped(BaseException):
    """`stop` was set while waiting (SIGTERM): not an error to count, the advisor is leaving.
    A BaseException so that no `except Exception` on the way swallows it."""


def _resolve(spec: str) -> Callable:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(connection, functions: dict[str, str]) -> None:
    """The worker process: (name, args, catalog token, catalog or None) in, (status, payload) out."""
    resolved = {name: _resolve(spec) for name, spec in functions.items()}
    catalog_token, catalog = None, None
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        name, args, token, sent = request
        if token != catalog_token:
            catalog_token, catalog = token, sent
        try:
            connection.send(("ok", resolved[name](*args, catalog=catalog)))
        except InputError as exc:
            connection.send(("input", (exc.message, exc.origin, exc.obj, exc.path)))
        except Exception as exc:  # noqa: BLE001 - reported to the loop, which counts and logs it
            connection.send(("error", f"{type(exc).__name__}: {exc}"))


class PlanWorker:
    """`call(name, *args, catalog=..., catalog_token=...)` runs `functions[name](*args, catalog=...)`
    in the worker process and returns its result, or raises PlanTimeout after `budget` seconds,
    Stopped when `stop` is set, InputError or PlanFailed as the function did. `beat` is called
    while waiting (the loop's liveness). Not thread-safe: the control loop is its only caller."""

    def __init__(self, functions: dict[str, str], *, budget: float, stop: threading.Event | None = None,
                 beat: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.functions = dict(functions)
        self.budget = budget
        self.stop = stop or threading.Event()
        self.beat = beat or (lambda: None)
        self.clock = clock
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None  # set and cleared with _process
        self._catalog_token: Any = None  # the catalog the worker holds
        self.restarts = 0

    def _start(self) -> Connection:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child, self.functions), name="plan-worker", daemon=True)
        process.start()
        child.close()
        self._process, self._connection, self._catalog_token = process, parent, None
        return parent

    def close(self) -> None:
        """End the worker (at once: a plan in progress is not worth waiting for)."""
        process, connection = self._process, self._connection
        self._process = self._connection = None
        if connection is not None:
            connection.close()
        if process is not None and process.is_alive():
            process.kill()
        if process is not None:
            process.join(5)

    def call(self, name: str, *args: Any, catalog: Any = None, catalog_token: Any = None) -> Any:
        if self.stop.is_set():
            raise Stopped()
        connection = self._connection
        if self._process is None or not self._process.is_alive() or connection is None:
            if self._process is not None:
                self.restarts += 1
                log.warning("plan worker exited (code %s); starting a new one", self._process.exitcode)
            self.close()
            connection = self._start()
        token = catalog_token if catalog_token is not None else id(catalog)
        send = catalog if token != self._catalog_token else None
        connection.send((name, args, token, send))
        self._catalog_token = token
        deadline = self.clock() + self.budget
        while True:
            if self.stop.is_set():
                self.close()
                raise Stopped()
            try:
                ready = connection.poll(SLICE)
            except (EOFError, OSError):
                ready = True  # the worker died: recv says so below
            self.beat()
            if ready:
                try:
                    status, payload = connection.recv()
                except (EOFError, OSError) as exc:
                    self.close()
                    raise PlanFailed(f"the plan worker died ({type(exc).__name__})") from None
                if status == "ok":
                    return payload
                if status == "input":
                    message, origin, obj, path = payload
                    raise InputError(message, origin=origin, obj=obj, path=path)
                raise PlanFailed(payload)
            if self.clock() >= deadline:
                self.close()
                raise PlanTimeout(f"{name} ran over its budget of {self.budget:g} s; stopped")
