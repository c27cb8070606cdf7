"""The advisor's consolidation metrics: the same answer as `provisioner consolidate`, computed on
the watched cluster (real reflectors against the fake API server, the real core) and exported as
Prometheus metrics. Upstream: pkg/controllers/disruption/controller.go (one pass) and metrics.go
(eligible nodes per method)."""
import pytest
import copy
import time

from provisioner.controller import core
from provisioner.controller.batcher import Batcher
from provisioner.controller.catalog import CatalogHolder
from provisioner.controller.controller import Controller
from provisioner.controller.http import Health
from provisioner.controller.kinds import PDB, WATCHED
from provisioner.controller.metrics import Metrics
from provisioner.controller.reflector import Reflector
from provisioner.disruption.causes import cause_of
from provisioner.disruption.consolidation import consolidate
from provisioner.disruption.snapshot import load_snapshot
from provisioner.manifests import read_paths
from tests.harness import PROJECT_DIR
from tests.provisioner.controller_fakes import FakeApiServer, FakeKube, cluster
from tests.provisioner.controller.test_http import advisor_loop, wait_until

SNAPSHOT = PROJECT_DIR / "examples" / "snapshots" / "small-cluster.yaml"


def snapshot_objects() -> list[dict]:
    """The example snapshot as the API server would hold it (one object per item, with uids)."""
    objects, _ = read_paths([str(SNAPSHOT)])
    out = []
    for obj in objects:
        for item in (obj["items"] if obj.get("kind") == "List" else [obj]):
            item = copy.deepcopy(item)
            meta = item["metadata"]
            meta["uid"] = f"uid-{item['kind']}-{meta.get('namespace', '')}-{meta['name']}"
            meta["resourceVersion"] = "1"
            out.append(item)
    return out


def cli_answer() -> dict:
    """What `provisioner consolidate -f SNAPSHOT -o json` prints (its run() in-process)."""
    objects, origins = read_paths([str(SNAPSHOT)])
    return consolidate(load_snapshot(objects, origins)).to_dict()


def sample(metrics: Metrics, name: str, **labels):
    return metrics.registry.get_sample_value(name, labels)


@pytest.mark.slow
def test_advisor_exports_the_consolidation_answer_over_the_api():
    """End to end: reflectors on the official client (PodDisruptionBudgets included) feed the loop,
    which runs the consolidation what-if once the cluster is listed; the metrics carry the same
    command, causes and savings as `provisioner consolidate -f` on the same objects."""
    kube = cluster(FakeKube(), *snapshot_objects())
    holder = CatalogHolder(None, core.load_bundled, on_change=lambda c: None)
    holder.start(0.0)
    with FakeApiServer(kube) as server:
        api = server.api()
        metrics = Metrics()
        controller = Controller(plan=core.make_plan(holder, "us-east-1"), metrics=metrics, recorder=None,
                                batcher=Batcher(0.05, 0.5), validate=core.validate,
                                consolidate=core.make_consolidate(holder, "us-east-1"))
        with advisor_loop(api, controller, Health(time.time)):
            wait_until(lambda: controller.last_consolidation_result is not None, "a consolidation what-if")
    expected = cli_answer()
    got = controller.last_consolidation_result
    assert {k: got[k] for k in ("actions", "blocked", "summary")} == {k: expected[k] for k in ("actions", "blocked", "summary")}
    assert sample(metrics, "provisioner_consolidation_action_nodes", kind="replace", reason="underutilized") == 2
    assert sample(metrics, "provisioner_consolidation_blocked_nodes", cause="pdb") == 1
    assert sample(metrics, "provisioner_consolidation_blocked_nodes", cause="do-not-disrupt") == 1
    assert sample(metrics, "provisioner_consolidation_blocked_nodes", cause="budget") == 1
    assert sample(metrics, "provisioner_consolidation_savings_usd_hour") == expected["actions"][0]["savings_usd_hour"]
    assert sample(metrics, "provisioner_consolidation_hourly_price_usd", when="before") == \
        expected["summary"]["price_usd_hour_before"]
    assert sample(metrics, "provisioner_consolidation_candidate_nodes", method="multi-node") == 3
    assert sample(metrics, "provisioner_consolidations_total", result="ok") == 1
    assert any(c[1] == PDB.kind for c in kube.calls)


def _controller(consolidate, interval=60.0):
    kube = cluster(FakeKube(), *snapshot_objects())
    controller = Controller(plan=lambda objects: {"nodeclaims": [], "unschedulable": [], "summary": {}},
                            metrics=Metrics(), recorder=None, consolidate=consolidate,
                            consolidation_interval=interval)
    for kind in WATCHED:
        Reflector(kind, kube, lambda m: controller.handle(m, 0.0)).step()
    return controller


def test_consolidation_runs_after_a_change_at_most_once_per_interval():
    """The what-if reads the whole cluster, so it runs when something changed, at most once per
    --consolidation-interval; with nothing changed it does not run again."""
    calls = []

    def fake(objects, now):
        calls.append(len(objects))
        return {"actions": [], "blocked": [], "summary": {}, "candidates": {}, "causes": []}
    controller = _controller(fake, interval=30.0)
    controller.tick(1.0)
    assert len(calls) == 1 and calls[0] == len(snapshot_objects())
    assert controller.wait(2.0) is None  # nothing changed: nothing due
    controller.cluster_changed = True
    controller.tick(10.0)
    assert len(calls) == 1 and controller.wait(10.0) == 21.0
    controller.tick(31.0)
    assert len(calls) == 2


def test_consolidation_failure_is_counted_and_the_advisor_goes_on():
    def broken(objects, now):
        raise RuntimeError("boom")
    controller = _controller(broken)
    controller.tick(1.0)
    assert sample(controller.metrics, "provisioner_consolidations_total", result="error") == 1


def test_real_core_causes_name_each_blocked_node():
    """Each sentence of the core maps to one short cause for the metric label."""
    result = core.make_consolidate(CatalogHolder(None, core.load_bundled, on_change=lambda c: None), "us-east-1")(
        snapshot_objects(), 0.0)
    assert sorted(result["causes"]) == ["budget", "do-not-disrupt", "pdb"]
    assert cause_of("NodePool 'a' has consolidationPolicy WhenEmpty and the node is not empty") == "policy"
    assert cause_of("no cheaper replacement exists for $0.0800/h") == "no-cheaper-replacement"
    assert cause_of("waits for a later pass: emptiness acted in this pass") == "waits-next-pass"
    assert cause_of("consolidateAfter (10m) of NodePool 'a' has not passed") == "consolidate-after"
    assert cause_of("something new") == "other"
