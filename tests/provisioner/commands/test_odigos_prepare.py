"""`provisioner odigos-prepare-nodes`: which nodes get odigos.io/needs-init, idempotence, dry run."""
import argparse
import json

from provisioner.commands.odigos_prepare import (TAINT, decide, prepare_nodes, register, render_report, run,
                                                 taint_patch)
from provisioner.controller.kube import ApiError
from tests.provisioner.controller_fakes import FakeApiServer, FakeKube, node


def fake_with(*nodes) -> FakeKube:
    kube = FakeKube()
    for n in nodes:
        kube.nodes[n["metadata"]["name"]] = n
        kube.objects["Node"].append(n)  # the same dict: what a list over HTTP returns follows patches
    return kube


def args(*argv):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["odigos-prepare-nodes", *argv])


def test_decide_taints_node_without_odiglet_label():
    assert decide(node("n-1")) == (True, "odiglet has not prepared it yet")


def test_decide_skips_node_prepared_by_community_or_enterprise_odiglet():
    assert decide(node("n-1", labels={"odigos.io/odiglet-oss-installed": "true"})) == (
        False, "already prepared by odiglet (odigos.io/odiglet-oss-installed=true)")
    assert decide(node("n-2", labels={"odigos.io/odiglet-enterprise-installed": "true"}))[0] is False
    assert decide(node("n-3", labels={"odigos.io/odiglet-oss-installed": "false"}))[0] is True


def test_decide_skips_tainted_fargate_and_deleting_nodes():
    assert decide(node("n-1", taints=[dict(TAINT)])) == (False, "already tainted odigos.io/needs-init:NoSchedule")
    assert decide(node("n-2", labels={"eks.amazonaws.com/compute-type": "fargate"}))[0] is False
    deleting = node("n-3")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert decide(deleting) == (False, "being deleted")


def test_decide_leaves_needs_init_with_other_effect_alone():
    taint, why = decide(node("n-1", taints=[{"key": "odigos.io/needs-init", "effect": "NoExecute"}]))
    assert taint is False and "NoExecute" in why


def test_taint_patch_appends_and_is_guarded_by_resource_version():
    assert taint_patch(node("n-1", rv="7", taints=[{"key": "a", "effect": "NoSchedule"}])) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/spec/taints/-", "value": {"key": "odigos.io/needs-init", "effect": "NoSchedule"}}]
    assert taint_patch(node("n-2", rv="3"))[1] == {"op": "add", "path": "/spec/taints",
                                                  "value": [{"key": "odigos.io/needs-init", "effect": "NoSchedule"}]}


def test_prepare_taints_only_unprepared_nodes_and_keeps_other_taints():
    kube = fake_with(node("a", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
                     node("b", labels={"odigos.io/odiglet-oss-installed": "true"}), node("c"))
    outcomes = prepare_nodes(kube, dry_run=False)
    assert [(o.node, o.action) for o in outcomes] == [("a", "tainted"), ("b", "skipped"), ("c", "tainted")]
    assert kube.nodes["a"]["spec"]["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}, TAINT]
    assert kube.nodes["c"]["spec"]["taints"] == [TAINT]
    assert "taints" not in kube.nodes["b"]["spec"]


def test_prepare_is_idempotent():
    kube = fake_with(node("a"), node("b"))
    prepare_nodes(kube, dry_run=False)
    second = prepare_nodes(kube, dry_run=False)
    assert [o.action for o in second] == ["skipped", "skipped"]
    assert len(kube.node_patches) == 2
    assert kube.nodes["a"]["spec"]["taints"] == [TAINT]


def test_prepare_dry_run_changes_nothing():
    kube = fake_with(node("a"))
    outcomes = prepare_nodes(kube, dry_run=True)
    assert [(o.node, o.action) for o in outcomes] == [("a", "would-taint")]
    assert kube.node_patches == []


def test_prepare_retries_on_conflict_with_fresh_node():
    kube = fake_with(node("a", rv="5"))
    kube.fail_patch_once.add("a")  # someone else wrote the node between our list and our patch
    outcomes = prepare_nodes(kube, dry_run=False)
    assert [(o.node, o.action) for o in outcomes] == [("a", "tainted")]
    assert [ops[0]["value"] for _, ops in kube.node_patches] == ["5", "6"]


def test_prepare_skips_node_odiglet_prepared_during_conflict():
    kube = fake_with(node("a", rv="5"))
    original_patch = kube.patch_node

    def odiglet_wins(name, operations):
        kube.nodes[name]["metadata"]["labels"]["odigos.io/odiglet-oss-installed"] = "true"
        kube.nodes[name]["metadata"]["resourceVersion"] = "6"
        kube.patch_node = original_patch
        return original_patch(name, operations)
    kube.patch_node = odiglet_wins
    outcomes = prepare_nodes(kube, dry_run=False)
    assert [(o.action, o.reason) for o in outcomes] == [
        ("skipped", "already prepared by odiglet (odigos.io/odiglet-oss-installed=true)")]
    assert "taints" not in kube.nodes["a"]["spec"]


def test_run_reports_table_and_exit_code(capsys):
    kube = fake_with(node("ip-10-0-1-1"), node("ip-10-0-1-2", labels={"odigos.io/odiglet-oss-installed": "true"}))
    assert run(args(), api=kube) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NODE", "ACTION", "REASON"]
    assert out[1].split()[:2] == ["ip-10-0-1-1", "tainted"]
    assert out[2].split()[:2] == ["ip-10-0-1-2", "skipped"]
    assert out[-1] == "2 nodes: 1 tainted, 1 skipped"


def test_run_json_dry_run(capsys):
    kube = fake_with(node("a"))
    assert run(args("--dry-run", "-o", "json"), api=kube) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"dryRun": True, "nodes": [{"node": "a", "action": "would-taint",
                                                 "reason": "odiglet has not prepared it yet"}]}


def test_run_fails_when_patch_is_forbidden(capsys):
    kube = fake_with(node("a"))

    def forbidden(name, operations):
        raise ApiError(403, 'nodes "a" is forbidden')
    kube.patch_node = forbidden
    assert run(args(), api=kube) == 1
    assert "failed" in capsys.readouterr().out


def test_run_reports_list_failure(capsys):
    class NoList(FakeKube):
        def list_nodes(self):
            raise ApiError(403, "nodes is forbidden")
    assert run(args(), api=NoList()) == 1
    assert capsys.readouterr().err == "error: cannot list nodes: 403: nodes is forbidden\n"


def test_custom_prepared_label_replaces_defaults():
    kube = fake_with(node("a", labels={"example.com/ready": "true"}), node("b", labels={"odigos.io/odiglet-oss-installed": "true"}))
    outcomes = prepare_nodes(kube, dry_run=True, prepared_labels=("example.com/ready",))
    assert [o.action for o in outcomes] == ["skipped", "would-taint"]


def test_render_report_marks_dry_run():
    from provisioner.commands.odigos_prepare import Outcome
    assert render_report([Outcome("a", "would-taint", "x")], True).splitlines()[-1] == \
        "1 nodes: 1 would-taint (dry run: nothing changed)"


def test_prepare_over_http_uses_json_patch():
    kube = fake_with(node("a", rv="9"))
    with FakeApiServer(kube) as server:
        outcomes = prepare_nodes(server.api(), dry_run=False)
        patch = [r for r in server.requests if r[0] == "PATCH"]
    assert [o.action for o in outcomes] == ["tainted"]
    assert patch == [("PATCH", "/api/v1/nodes/a", "application/json-patch+json")]
    assert kube.nodes["a"]["spec"]["taints"] == [TAINT]


def test_parse_taint_accepts_kubectl_syntax():
    from provisioner.commands.odigos_prepare import parse_taint
    assert parse_taint("odigos.io/needs-init=:NoSchedule") == {"key": "odigos.io/needs-init", "effect": "NoSchedule"}
    assert parse_taint("dedicated=gpu:NoExecute") == {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    assert parse_taint("a:PreferNoSchedule") == {"key": "a", "effect": "PreferNoSchedule"}
    import argparse as _argparse
    import pytest as _pytest
    with _pytest.raises(_argparse.ArgumentTypeError):
        parse_taint("odigos.io/needs-init=:Sometimes")


def test_selector_filters_nodes_like_kubectl():
    from provisioner.commands.odigos_prepare import parse_selector, selected
    terms = parse_selector("kubernetes.io/os=linux,eks.amazonaws.com/compute-type!=fargate,!odigos.io/odiglet-oss-installed")
    assert selected({"kubernetes.io/os": "linux"}, terms)
    assert not selected({"kubernetes.io/os": "windows"}, terms)
    assert not selected({"kubernetes.io/os": "linux", "eks.amazonaws.com/compute-type": "fargate"}, terms)
    assert not selected({"kubernetes.io/os": "linux", "odigos.io/odiglet-oss-installed": "true"}, terms)
    assert selected({"gpu": "x"}, parse_selector("gpu")) and not selected({}, parse_selector("gpu"))


def test_run_honours_taint_and_selector_flags(capsys):
    kube = fake_with(node("linux-a"), node("win-b", labels={"kubernetes.io/os": "windows"}))
    assert run(args("--taint", "example.com/wait=:NoSchedule", "--selector", "kubernetes.io/os=linux"), api=kube) == 0
    assert kube.nodes["linux-a"]["spec"]["taints"] == [{"key": "example.com/wait", "effect": "NoSchedule"}]
    assert "taints" not in kube.nodes["win-b"]["spec"]
    assert "win-b    skipped      not selected by --selector" in capsys.readouterr().out.splitlines()


def test_accepts_the_odigos_component_prepare_command():
    """The Odigos component's Job runs this command in the provisioner image: it must parse."""
    try:
        from components.config.odigos import OdigosConfig
        from components.odigos import prepare_command
    except ImportError as exc:  # the Odigos component is another issue's; skip until it is there
        import pytest as _pytest
        _pytest.skip(f"components.odigos not available: {exc}")
    command = prepare_command(OdigosConfig(enabled=True, mount_method="k8s-host-path"), provisioner_image=True)
    assert command[:2] == ["provisioner", "odigos-prepare-nodes"]
    kube = fake_with(node("a"), node("f", labels={"eks.amazonaws.com/compute-type": "fargate"}))
    kube.bindings.add(command[command.index("--release-binding") + 1])
    assert run(args(*command[2:]), api=kube) == 0
    assert kube.nodes["a"]["spec"]["taints"] == [TAINT]
    assert "taints" not in kube.nodes["f"]["spec"]
    assert kube.bindings == set()


def test_release_binding_deletes_it_once_every_node_is_done(capsys):
    """The Job's ClusterRoleBinding (patch on every Node) stayed bound after the one-shot Job
    finished; the command now deletes it when no write failed."""
    kube = fake_with(node("a"))
    kube.bindings.add("odigos-prepare-nodes-abc")
    assert run(args("--release-binding", "odigos-prepare-nodes-abc"), api=kube) == 0
    assert kube.bindings == set()
    assert capsys.readouterr().out.splitlines()[-1] == "released ClusterRoleBinding odigos-prepare-nodes-abc"


def test_release_binding_is_kept_while_a_write_failed_or_on_a_dry_run():
    kube = fake_with(node("a"))
    kube.bindings.add("b")

    def forbidden(name, operations):
        raise ApiError(403, 'nodes "a" is forbidden')
    kube.patch_node = forbidden
    assert run(args("--release-binding", "b"), api=kube) == 1
    assert run(args("--release-binding", "b", "--dry-run"), api=fake_with(node("a"))) == 0
    assert kube.bindings == {"b"}


def test_release_binding_already_gone_is_fine_and_a_refusal_is_exit_1(capsys):
    assert run(args("--release-binding", "gone"), api=fake_with(node("a"))) == 0
    kube = fake_with(node("a"))

    def refused(name):
        raise ApiError(403, "forbidden")
    kube.delete_cluster_role_binding = refused
    assert run(args("--release-binding", "b"), api=kube) == 1
    assert "error: cannot delete ClusterRoleBinding b: 403: forbidden" in capsys.readouterr().err
