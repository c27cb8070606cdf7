"""`replay --scheduler`: the same jobs on a Dask distributed cluster on 127.0.0.1 give byte-identical
output to local processes; an unreachable scheduler is a clear exit 2, bounded in time."""
import json
import socket

import pytest

from provisioner.cli import main

from tests.provisioner.replay.replay_builders import base, deployment, nodeclass, nodepool, write, write_trace

distributed = pytest.importorskip("distributed", reason="Dask distributed is an optional extra (not installed)")

EVENTS = [{"at": "0s", "apply": deployment(replicas=10)},
          {"at": "1h", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}}]


@pytest.fixture(scope="module")
def scheduler():
    # Threads, not processes (quicker to start under load), but tcp on 127.0.0.1: every job and
    # result still crosses the wire pickled, as on a remote cluster.
    with distributed.LocalCluster(host="127.0.0.1", protocol="tcp://", n_workers=2, threads_per_worker=1,
                                  processes=False, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _out(capsys, argv) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_compare_on_a_dask_cluster_prints_the_same_json_as_local_processes(tmp_path, capsys, scheduler):
    cluster = write(tmp_path, "cluster.yaml", *base())
    other = write(tmp_path, "other.yaml", nodeclass(), nodepool(policy="WhenEmpty"))
    argv = ["replay", "-f", cluster, "--trace", write_trace(tmp_path, EVENTS), "--until", "2h", "--compare", other,
            "-o", "json"]
    local = _out(capsys, [*argv, "--workers", "2"])
    remote = _out(capsys, [*argv, "--scheduler", scheduler])
    assert remote == local
    assert json.loads(remote)["compare"][0]["pods_evicted"] == 2


def test_batch_on_a_dask_cluster_keeps_trace_order_and_the_same_json(tmp_path, capsys, scheduler):
    folder = tmp_path / "fleet"
    folder.mkdir()
    for i in range(4):
        write_trace(folder, EVENTS if i % 2 == 0 else EVENTS[:1], f"c{i}.yaml")
    argv = ["replay", "-f", write(tmp_path, "cluster.yaml", *base()), "--batch", str(folder), "--until", "2h",
            "-o", "json"]
    local = _out(capsys, [*argv, "--workers", "2"])
    remote = _out(capsys, [*argv, "--scheduler", scheduler])
    assert remote == local
    assert [t["summary"]["pods_evicted"] for t in json.loads(remote)["traces"]] == [2, 0, 2, 0]


def test_unreachable_scheduler_exits_2_naming_it(tmp_path, capsys, monkeypatch):
    import provisioner.replay.distributed as on_dask
    monkeypatch.setattr(on_dask, "CONNECT_TIMEOUT_S", 2.0)  # the default 10 s, shortened for the test
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    argv = ["replay", "-f", write(tmp_path, "cluster.yaml", *base()), "--trace", write_trace(tmp_path, EVENTS),
            "--until", "2h", "--scheduler", address]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert address in captured.err and "cannot reach the Dask scheduler within 2 s" in captured.err
    assert "Traceback" not in captured.err


def test_without_distributed_the_scheduler_option_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: import raises ImportError
    argv = ["replay", "-f", write(tmp_path, "cluster.yaml", *base()), "--trace", write_trace(tmp_path, EVENTS),
            "--until", "2h", "--scheduler", "tcp://127.0.0.1:8786"]
    assert main(argv) == 2
    assert "[distributed]" in capsys.readouterr().err


def test_the_provisioner_does_not_import_dask_without_scheduler():
    import subprocess
    import sys
    code = ("import sys, provisioner.cli, provisioner.commands.replay, provisioner.replay.judge; "
            "print('distributed' in sys.modules, 'provisioner.replay.distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split() == ["False", "False"]


def test_invalid_compare_nodeclass_on_a_dask_worker_exits_2_as_locally(tmp_path, capsys, scheduler):
    bad = nodeclass()
    del bad["spec"]["securityGroupSelectorTerms"]
    argv = ["replay", "-f", write(tmp_path, "cluster.yaml", *base()), "--trace", write_trace(tmp_path, EVENTS),
            "--compare", write(tmp_path, "other.yaml", bad, nodepool())]
    assert main([*argv, "--workers", "1"]) == 2
    alone = capsys.readouterr().err
    assert main([*argv, "--scheduler", scheduler]) == 2
    assert capsys.readouterr().err == alone


def test_tune_replay_on_a_dask_cluster_judges_as_local_processes(tmp_path, capsys, scheduler):
    pytest.importorskip("scipy")
    from tests.provisioner.replay.test_judge import _cluster
    argv = ["tune", "-f", write(tmp_path, "c.yaml", *_cluster()), "--replay",
            write_trace(tmp_path, [{"at": "2h", "scale": {"kind": "Deployment", "name": "svc-3", "replicas": 10}}]),
            "--until", "4h", "-o", "json"]
    local = _out(capsys, [*argv, "--workers", "1"])
    remote = _out(capsys, [*argv, "--scheduler", scheduler])
    assert remote == local
    assert json.loads(remote)["replay"]["candidates"][0]["accepted"]
