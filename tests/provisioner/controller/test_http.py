"""Over real sockets on 127.0.0.1: the HTTP endpoints, the adapter on the official client
against a fake API server, and the whole advisor end to end. Every wait is bounded."""
import contextlib
import queue
import threading
import time
import urllib.error
import urllib.request

import pytest

from provisioner.controller.batcher import Batcher, TokenBucket
from provisioner.controller.controller import Controller
from provisioner.controller.events import EventRecorder
from provisioner.controller.http import Health, make_server, serve_in_background
from provisioner.controller.kinds import NODE, POD, WATCHED
from provisioner.controller.kube import ApiError, Gone
from provisioner.controller.loop import run_loop, start_reflectors
from provisioner.controller.metrics import Metrics
from tests.provisioner.controller_fakes import FakeApiServer, FakeKube, cluster, gone, node, pod, standard_objects

TIMEOUT = 10.0  # upper bound of every wait below; never an assertion on duration


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def endpoints():
    now = [1000.0]
    metrics = Metrics(clock=lambda: now[0])
    health = Health(lambda: now[0], stale_after=120.0)
    server = make_server("127.0.0.1", 0, metrics.registry, health)
    serve_in_background(server, poll_interval=0.05)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", metrics, health, now
    finally:
        server.shutdown()
        server.server_close()


def test_readyz_fails_until_first_sync(endpoints):
    url, _, health, _ = endpoints
    assert get(f"{url}/readyz") == (503, "waiting for the first full list\n")
    health.ready = True
    assert get(f"{url}/readyz") == (200, "ok\n")


def test_healthz_fails_when_loop_stalls(endpoints):
    url, _, health, now = endpoints
    assert get(f"{url}/healthz") == (200, "ok\n")
    now[0] += 121.0
    assert get(f"{url}/healthz") == (503, "loop stalled\n")
    health.beat()
    assert get(f"{url}/healthz")[0] == 200


def test_metrics_endpoint_exposes_plan_and_catalog(endpoints):
    url, metrics, _, now = endpoints
    metrics.set_catalog("bundled", now[0] - 86400.0)
    metrics.observe_plan(pending=3, unschedulable_reasons=["needs 96 cpu", "needs 128 cpu"],
                         nodeclaims=[{"nodepool": "web", "price_usd_hour": 0.192}], hourly_price=0.192)
    status, text = get(f"{url}/metrics")
    assert status == 200
    lines = set(text.splitlines())
    assert "provisioner_pending_pods 3.0" in lines
    assert 'provisioner_unschedulable_pods{reason="needs N cpu"} 2.0' in lines
    assert "provisioner_plan_hourly_price_usd 0.192" in lines
    assert 'provisioner_nodepool_projected_hourly_cost_usd{nodepool="web"} 0.192' in lines
    assert 'provisioner_catalog_info{source="bundled"} 1.0' in lines
    assert "provisioner_catalog_age_seconds 86400.0" in lines
    assert get(f"{url}/nope")[0] == 404


def test_adapter_lists_pages_as_plain_dicts():
    kube = cluster(FakeKube(page_size_cap=1), pod("p-0"), pod("p-1"))
    with FakeApiServer(kube) as server:
        page = server.api().list(POD, limit=1, continue_token=None)
    assert [i["metadata"]["name"] for i in page["items"]] == ["p-0"]
    assert page["metadata"] == {"resourceVersion": "1000", "continue": "1"}
    assert page["items"][0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}


def test_adapter_streams_watch_and_raises_gone_on_expired_version():
    kube = FakeKube()
    kube.streams["Node"].append([{"type": "ADDED", "object": node("n-1", rv="1001")}, gone()])
    with FakeApiServer(kube) as server:
        events = []
        with pytest.raises(Gone):
            for event in server.api().watch(NODE, resource_version="1000", timeout_seconds=5):
                events.append(event)
        watch_request = server.requests[-1][1]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "n-1")]
    assert "watch=true" in watch_request and "resourceVersion=1000" in watch_request
    assert "allowWatchBookmarks=true" in watch_request


def test_adapter_maps_http_errors_to_api_errors():
    kube = FakeKube()
    kube.list_failures["Node"].append(ApiError(403, 'nodes is forbidden: User "x" cannot list resource "nodes"'))
    with FakeApiServer(kube) as server:
        with pytest.raises(ApiError) as error:
            server.api().list(NODE, limit=10, continue_token=None)
    assert error.value.status == 403
    assert "cannot list resource" in str(error.value)


def test_adapter_reports_refused_connection_as_status_zero():
    with FakeApiServer(FakeKube()) as server:
        api = server.api()
    with pytest.raises(ApiError) as error:  # the server is gone now
        api.list(NODE, limit=10, continue_token=None)
    assert error.value.status == 0


def test_adapter_creates_events_and_patches_with_merge_patch():
    kube = FakeKube()
    body = {"metadata": {"name": "web-0.abc", "namespace": "default"}, "involvedObject": {"name": "web-0"}, "count": 1}
    with FakeApiServer(kube) as server:
        api = server.api()
        api.create_event("default", body)
        with pytest.raises(ApiError) as duplicate:
            api.create_event("default", body)
        api.patch_event("default", "web-0.abc", {"count": 2})
        patch = server.requests[-1]
    assert duplicate.value.status == 409
    assert kube.events[("default", "web-0.abc")]["count"] == 2
    assert patch == ("PATCH", "/api/v1/namespaces/default/events/web-0.abc", "application/merge-patch+json")


@contextlib.contextmanager
def advisor_loop(api, controller: Controller, health: Health):
    """The advisor as `serve` wires it (provisioner.controller.command.run): a reflector per watched
    kind over `api` feeding the controller loop on a thread, stopped and joined on exit. Yields
    the loop's thread."""
    stop = threading.Event()
    messages: queue.Queue = queue.Queue()
    start_reflectors(api, WATCHED, messages.put, stop, watch_timeout=1, quiet_pause=0.05)
    loop = threading.Thread(target=run_loop, args=(controller, messages, stop, health, time.time, 0.05), daemon=True)
    loop.start()
    try:
        yield loop
    finally:
        stop.set()
        loop.join(TIMEOUT)


def wait_until(condition, what: str):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


@pytest.mark.slow
def test_advisor_end_to_end_records_event_and_serves_metrics():
    """Reflector threads on the official client, the loop, the recorder and /metrics together."""
    kube = cluster(FakeKube(), *standard_objects(), pod("big-0", cpu="1000"), pod("web-0"))
    kube.streams["Pod"].append(gone())  # the first watch has expired: the advisor must relist

    def plan(objects):
        pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
        return {"nodeclaims": [{"nodepool": "default", "price_usd_hour": 0.096, "pods": ["default/web-0"]}],
                "unschedulable": [{"pod": "default/big-0", "reason": 'nodepool "default": no instance type has enough resources'}]
                if "default/big-0" in pods else [], "summary": {"price_usd_hour": 0.096}}

    with FakeApiServer(kube) as server:
        api = server.api()
        metrics = Metrics()
        recorder = EventRecorder(api, bucket=TokenBucket(10, 10), instance="test")
        controller = Controller(plan=plan, metrics=metrics, recorder=recorder, batcher=Batcher(0.05, 0.5))
        health = Health(time.time)
        http = make_server("127.0.0.1", 0, metrics.registry, health)
        serve_in_background(http, poll_interval=0.05)
        try:
            with advisor_loop(api, controller, health) as loop:
                wait_until(lambda: kube.events, "the event on big-0")
                wait_until(lambda: health.ready, "readiness")
                # The relist runs on the Pod reflector's thread, racing the other kinds' (12 of them).
                wait_until(lambda: len([c for c in kube.calls if c[:2] == ("list", "Pod")]) >= 2, "the Pod relist")
                url = f"http://127.0.0.1:{http.server_address[1]}"
                status, text = get(f"{url}/metrics")
                ready = get(f"{url}/readyz")
        finally:
            http.shutdown()
            http.server_close()
    event = next(iter(kube.events.values()))
    assert event["involvedObject"]["name"] == "big-0"
    assert ready == (200, "ok\n")
    assert status == 200 and "provisioner_pending_pods 2.0" in text.splitlines()
    assert 'provisioner_nodepool_projected_hourly_cost_usd{nodepool="default"} 0.096' in text.splitlines()
    assert [c for c in kube.calls if c[:2] == ("list", "Pod")][:2] == [("list", "Pod", None), ("list", "Pod", None)]
    assert not loop.is_alive()


@pytest.mark.slow
def test_serve_command_end_to_end_in_subprocess(tmp_path):
    """`python -m provisioner serve` as the container runs it: kubeconfig -> the fake API server,
    the real core on the bundled catalog, an Event on the oversized pod, metrics, SIGTERM."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from tests.harness import PROJECT_DIR
    from tests.provisioner.controller_fakes import nodeclass, nodepool

    kube = cluster(FakeKube(), nodeclass(), nodepool(), pod("web-0"), pod("huge-0", cpu="1000"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with FakeApiServer(kube) as server:
        env = {**os.environ, "KUBECONFIG": server.kubeconfig(tmp_path), "POD_NAME": "provisioner-test",
               "PYTHONPATH": str(PROJECT_DIR)}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "provisioner", "serve", "--listen", "127.0.0.1", "--port", str(port),
             "--catalog", "bundled", "--batch-idle", "0.05", "--batch-max", "0.5", "--watch-timeout", "1"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            url = f"http://127.0.0.1:{port}"

            def ready():
                try:
                    return get(f"{url}/readyz")[0] == 200
                except OSError:
                    return process.poll() is not None  # stop waiting if it died
            wait_until(ready, "readiness")
            wait_until(lambda: kube.events or process.poll() is not None, "the event on huge-0")
            status, text = get(f"{url}/metrics")
        finally:
            process.send_signal(signal.SIGTERM)
            output, _ = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, output
    assert [e["involvedObject"]["name"] for e in kube.events.values()] == ["huge-0"]
    assert next(iter(kube.events.values()))["reportingInstance"] == "provisioner-test"
    lines = text.splitlines()
    assert "provisioner_pending_pods 2.0" in lines
    assert 'provisioner_catalog_info{source="bundled"} 1.0' in lines
    assert any(line.startswith('provisioner_nodepool_projected_hourly_cost_usd{nodepool="default"}') for line in lines)


def test_idle_connections_are_capped_and_timed_out_and_probes_still_answer():
    """400 connections that never send a request held 400 threads for ever (415 threads). Now at
    most 32 are served at once (the rest are closed on arrival, without a thread), each idle one
    is closed after the idle timeout, and the probes answer once they are gone."""
    import socket

    metrics = Metrics()
    health = Health(time.time)
    server = make_server("127.0.0.1", 0, metrics.registry, health, idle_timeout=1.0, max_connections=32)
    serve_in_background(server, poll_interval=0.05)
    port = server.server_address[1]
    before = threading.active_count()
    sockets = []
    peak = 0
    try:
        for _ in range(400):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))
            peak = max(peak, threading.active_count() - before)
        closed = 0
        for sock in sockets:  # the server closes every one: at once over the cap, after 1 s idle otherwise
            peak = max(peak, threading.active_count() - before)
            try:
                closed += sock.recv(1) == b""
            except ConnectionResetError:
                closed += 1
            except socket.timeout:
                pass
        assert closed == 400
        assert peak <= 32
        assert server.refused >= 1
        deadline = time.monotonic() + TIMEOUT
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert threading.active_count() == before
        assert get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
    finally:
        for sock in sockets:
            sock.close()
        server.shutdown()
        server.server_close()


def test_readiness_is_published_before_the_first_plan_however_long_it_takes():
    """The loop set /readyz only after its first tick, which runs the first consolidation what-if:
    one that takes minutes (a budget schedule that never fires) kept the advisor unready."""
    from provisioner.controller.reflector import Replace

    release = threading.Event()
    controller = Controller(plan=lambda objects: {"nodeclaims": [], "unschedulable": [], "summary": {}},
                            metrics=Metrics(), recorder=None,
                            consolidate=lambda objects, now: release.wait(TIMEOUT) and {})
    messages: queue.Queue = queue.Queue()
    for kind in WATCHED:
        messages.put(Replace(kind, [], "1"))
    health = Health(time.monotonic)
    stop = threading.Event()
    loop = threading.Thread(target=run_loop, args=(controller, messages, stop, health, time.monotonic), daemon=True)
    loop.start()
    try:
        deadline = time.monotonic() + TIMEOUT / 2
        while not health.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert health.ready
    finally:
        stop.set()
        release.set()
        loop.join(TIMEOUT)
