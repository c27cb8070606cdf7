"""offline.render's build folder: renders into one folder at once take turns, and a folder that
cannot be written is its own exit code (5), not the invalid-config 2."""
from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from offline import render
from offline.monitor import Capture, Declared


def _capture(marker: str) -> Capture:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{marker}"}, "data": {"a": "b"}}
    resource = Declared(type="kubernetes:core/v1:ConfigMap", name=f"cm-{marker}", urn=f"urn:{marker}",
                        parent=None, custom=True, inputs=config, options={})
    return Capture(resources=[resource], outputs={"marker": marker})


def test_nine_renders_into_one_folder_at_once_all_succeed_and_leave_one_whole_build(tmp_path):
    """Nine renders of one stack at once: 4 of 9 used to fail "cannot write" (one removed the
    folder the other was replacing). Each now publishes a whole build in turn."""
    out = tmp_path / "build" / "dev"
    errors: list[BaseException] = []
    start = threading.Barrier(9)

    def one(i: int) -> None:
        start.wait()
        try:
            for _ in range(5):
                render.publish_build(_capture(str(i)), out)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    marker = __import__("json").loads((out / "outputs.json").read_text())["marker"]
    assert sorted(p.name for p in (out / "manifests").iterdir()) == [f"configmap-cm-{marker}.yaml"]
    assert sorted(p.name for p in out.parent.iterdir()) == [".dev.lock", "dev"]  # no staging left behind


def test_a_render_waits_while_another_holds_the_folder(tmp_path):
    out = tmp_path / "build" / "dev"
    out.parent.mkdir(parents=True)
    fd = os.open(out.parent / ".dev.lock", os.O_WRONLY | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    writer = threading.Thread(target=render.publish_build, args=(_capture("a"), out))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive() and not out.exists()
    os.close(fd)
    writer.join(10)
    assert (out / "resources.json").is_file()


def test_a_folder_that_cannot_be_written_is_exit_5_not_the_config_error_2(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(render, "render_stack", lambda *a, **k: _capture("a"))
    assert render.main(["dev", "--project-dir", str(tmp_path), "--out", str(blocker / "dev")]) == 5
    assert capsys.readouterr().err.startswith(f"error: cannot write {blocker / 'dev'}: ")


def test_an_out_that_is_a_named_pipe_is_refused_before_rendering(tmp_path, monkeypatch, capsys):
    os.mkfifo(tmp_path / "pipe")
    monkeypatch.setattr(render, "render_stack", lambda *a, **k: (_ for _ in ()).throw(AssertionError("rendered")))
    assert render.main(["dev", "--project-dir", str(tmp_path), "--out", str(tmp_path / "pipe")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'pipe'}: is a named pipe (FIFO), not a folder; nothing rendered\n"


def test_a_failed_publish_keeps_the_previous_build(tmp_path, monkeypatch):
    out = tmp_path / "dev"
    render.publish_build(_capture("old"), out)
    real = os.replace

    def failing(src, dst):
        if Path(src).name.startswith(".dev-") and Path(dst) == out:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(render.os, "replace", failing)
    try:
        render.publish_build(_capture("new"), out)
    except OSError:
        pass
    assert '"marker": "old"' in (out / "outputs.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dev.lock", "dev"]
