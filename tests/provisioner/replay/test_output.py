"""Rendering: the table, --compare in every format, the HTML page opened in headless Chromium,
--batch and --workers (the same results whichever process replays)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from provisioner.cli import main
from provisioner.replay.engine import Options
from provisioner.replay.parallel import replay_all
from provisioner.replay.trace import parse_trace

from tests.provisioner.replay.replay_builders import base, deployment, nodeclass, nodepool, write, write_trace

EVENTS = [{"at": "0s", "apply": deployment(replicas=10)},
          {"at": "1h", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}}]
CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", shutil.which("chromium") or "")
                 if p and os.path.exists(p)), None)


def _files(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", *base())
    other = write(tmp_path, "other.yaml", nodeclass(), nodepool(policy="WhenEmpty"))
    return cluster, other, write_trace(tmp_path, EVENTS)


def test_table_prints_the_summary_the_pools_and_the_disruptions(tmp_path, capsys):
    cluster, _, trace = _files(tmp_path)
    assert main(["replay", "-f", cluster, "--trace", trace, "--until", "2h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Replayed 2 h: $")
    assert "NODEPOOL  COST_USD  NODE_HOURS  LAUNCHED" in out
    assert re.search(r"0d01:05:00\s+underutilized\s+default-00001\s+default-00002\s+2", out)


def test_compare_is_side_by_side_in_json_and_table(tmp_path, capsys):
    cluster, other, trace = _files(tmp_path)
    assert main(["replay", "-f", cluster, "--trace", trace, "--until", "2h", "--compare", other, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["compare"]
    assert [r["label"] for r in rows] == [cluster, other]
    assert rows[0]["evictions_by_reason"]["underutilized"] == 2 and rows[1]["pods_evicted"] == 0  # WhenEmpty
    assert rows[1]["cost_usd"] > rows[0]["cost_usd"]
    assert list(rows[0]) == ["label", "cost_usd", "node_hours", "pods_evicted", "evictions_by_reason", "pending_p95_s"]
    assert main(["replay", "-f", cluster, "--trace", trace, "--until", "2h", "--compare", other]) == 0
    table = capsys.readouterr().out
    assert "Comparison:" in table and "PENDING_P95_S" in table and other in table


def test_workers_give_the_same_results_as_one_process():
    trace = parse_trace({"events": EVENTS}, "t")
    jobs = [(base(), None, trace, Options(until=7200.0, seed=s)) for s in (0, 1, 2)]
    assert replay_all(jobs, workers=2) == replay_all(jobs, workers=1)


def test_batch_replays_every_trace_of_a_folder(tmp_path, capsys):
    folder = tmp_path / "fleet"
    folder.mkdir()
    write_trace(folder, EVENTS, "a.yaml")
    write_trace(folder, EVENTS[:1], "b.yaml")
    cluster = write(tmp_path, "cluster.yaml", *base())
    assert main(["replay", "-f", cluster, "--batch", str(folder), "--until", "2h", "--workers", "2", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["trace"] for t in data["traces"]] == [str(folder / "a.yaml"), str(folder / "b.yaml")]
    assert data["traces"][0]["summary"]["pods_evicted"] == 2 and data["traces"][1]["summary"]["pods_evicted"] == 0


def test_html_needs_an_output_file(tmp_path, capsys):
    cluster, _, trace = _files(tmp_path)
    assert main(["replay", "-f", cluster, "--trace", trace, "-o", "html"]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_page_draws_its_plots_offline_in_headless_chromium(tmp_path, capsys):
    cluster, other, trace = _files(tmp_path)
    page = tmp_path / "replay.html"
    assert main(["replay", "-f", cluster, "--trace", trace, "--until", "2h", "--compare", other, "-o", "html",
                 "--out", str(page)]) == 0
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)  # plotly.js is inline: nothing to fetch at view time
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert dom.count('class="main-svg"') >= 2  # plotly rendered its SVG
    for title in ("Nodes and price over time", "Pending pods over time", "Disruptions (pods evicted)", "Cost by NodePool"):
        assert title in dom
    # nodes, price, pending and disruptions per set; the WhenEmpty set has no disruption to draw
    assert len(re.findall(r'<g class="trace scatter', dom)) == 7
    assert len(re.findall(r'<g class="trace bars', dom)) == 2
    lines = re.findall(r'<path class="js-line" d="([^"]+)"', dom)
    assert lines and all(len(d) > 10 for d in lines[:3])  # the step lines have points
    assert "<table id=\"compare\">" in dom or "<table id='compare'>" in dom or 'id="compare"' in dom
