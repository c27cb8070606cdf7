"""/metrics, /healthz and /readyz on one port, in a daemon thread."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class Health:
    """Shared between the loop (writer) and the HTTP thread (reader); plain attributes are
    enough because each is one reference assignment."""

    def __init__(self, clock: Callable[[], float], stale_after: float = 120.0):
        self.clock = clock
        self.stale_after = stale_after
        self.heartbeat = clock()
        self.ready = False

    def beat(self) -> None:
        self.heartbeat = self.clock()

    def alive(self) -> bool:
        """False once the loop has not come round for `stale_after` seconds (a wedged plan or a
        dead loop thread): the kubelet then restarts the container."""
        return self.clock() - self.heartbeat < self.stale_after


# A connection that sends no complete request within this many seconds is closed: a probe or a
# scrape sends its request at once. Without it, each idle connection held a thread for ever.
IDLE_TIMEOUT = 10.0
# Connections served at once; more are closed on arrival, without a thread. Prometheus and the
# kubelet need a handful; the NetworkPolicy admits nobody else (components/provisioner.py).
MAX_CONNECTIONS = 32


class BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `max_connections` handler threads: a connection over the
    cap is closed at once (the client sees a reset, the server keeps its threads)."""

    daemon_threads = True
    request_queue_size = 128  # listen backlog: a burst of connections is accepted (and refused) at once

    def __init__(self, address, handler, max_connections: int = MAX_CONNECTIONS):
        self._slots = threading.BoundedSemaphore(max_connections)
        self.refused = 0
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_server(host: str, port: int, registry: CollectorRegistry, health: Health, *,
                idle_timeout: float = IDLE_TIMEOUT, max_connections: int = MAX_CONNECTIONS) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        timeout = idle_timeout  # socket timeout: a silent or slow client is dropped (StreamRequestHandler)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = health.alive()
                self._send(200 if ok else 503, b"ok\n" if ok else b"loop stalled\n")
            elif path == "/readyz":
                ok = health.ready
                self._send(200 if ok else 503, b"ok\n" if ok else b"waiting for the first full list\n")
            else:
                self._send(404, b"not found\n")

        def _send(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - probes every few seconds would flood the log
            return

    return BoundedServer((host, port), Handler, max_connections)


def serve_in_background(server: ThreadingHTTPServer, poll_interval: float = 0.5) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, args=(poll_interval,), name="http", daemon=True)
    thread.start()
    return thread
