"""Commands that need a cluster (`provisioner serve`, `provisioner odigos-prepare-nodes`,
`offline.preflight`) without one: a single line, exit 2, saying no kubeconfig was found, where
it was looked for and how to get one (they used to end in two chained tracebacks); `serve`
options out of range are a usage message, exit 2, not a traceback (`--port 99999` was an
OverflowError from the socket)."""
from __future__ import annotations

import socket

import pytest

from offline import preflight
from provisioner.cli import main as provisioner_main
from tests.harness import PROJECT_DIR


@pytest.fixture
def no_cluster(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / ".kube" / "config"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _one_line(err: str, looked: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: no kubeconfig found: not in a pod (KUBERNETES_SERVICE_HOST unset), and no file at "
                          f"{looked}; `aws eks update-kubeconfig --name <cluster> --region <region>` writes one"), err


@pytest.mark.parametrize("argv", [["serve", "--listen", "127.0.0.1", "--catalog", "bundled"],
                                  ["odigos-prepare-nodes", "--dry-run"]], ids=["serve", "odigos-prepare-nodes"])
def test_a_cluster_command_without_kubeconfig_is_one_line_exit_2(no_cluster, capsys, argv):
    if argv[0] == "serve":
        argv = [*argv, "--port", str(_free_port())]
    assert provisioner_main(argv) == 2
    _one_line(capsys.readouterr().err, str(no_cluster))


def test_preflight_without_kubeconfig_is_one_line_exit_2(no_cluster, capsys):
    assert preflight.main(["dev", "--to", "1.14.1", "--project-dir", str(PROJECT_DIR)]) == 2
    _one_line(capsys.readouterr().err, str(no_cluster))


def test_kubeconfig_paths_from_the_environment_are_named(no_cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a:{tmp_path}/b")
    assert provisioner_main(["odigos-prepare-nodes"]) == 2
    assert f"no file at {tmp_path}/a, {tmp_path}/b ($KUBECONFIG)" in capsys.readouterr().err


def test_a_malformed_kubeconfig_is_named_on_one_line(no_cluster, capsys):
    no_cluster.parent.mkdir()
    no_cluster.write_text("clusters: [\n")
    assert provisioner_main(["odigos-prepare-nodes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: kubeconfig {no_cluster} cannot be used: ") and err.count("\n") == 1


@pytest.mark.parametrize("option,value,message", [
    ("--port", "99999", "argument --port: expected an integer from 1 to 65535, got 99999"),
    ("--watch-timeout", "-5", "argument --watch-timeout: expected an integer from 1 to 86400, got -5"),
    ("--event-burst", "-1", "argument --event-burst: expected an integer from 1 to 10000, got -1"),
    ("--event-qps", "nan", "argument --event-qps: expected a positive number, got 'nan'"),
])
def test_serve_options_out_of_range_are_a_usage_error(capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_:
        provisioner_main(["serve", option, value])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
