"""`python -m offline.preflight`: read-only checks of a live cluster before an upgrade, against a
fake API server on 127.0.0.1 (the official client, a kubeconfig, real sockets). Cases from
aws/karpenter-provider-aws#8320 and #7734 (storedVersions), the troubleshooting guide (helm
ownership of the CRDs), and the upgrade guide (fields and CRDs per release)."""

import base64
import gzip
import json
from urllib.parse import parse_qs, urlparse

from components import reference
from offline import preflight
from tests.fake_http import JsonHandler, LocalServer
from tests.harness import PROJECT_DIR

OWNED = {"meta.helm.sh/release-name": "karpenter-crd", "meta.helm.sh/release-namespace": "kube-system"}


def crd(stem, stored=None, owner=OWNED):
    data = reference.release("1.14.1").crds[stem]
    stored = stored or [v["name"] for v in data["versions"]]
    return {"metadata": {"name": f"{data['plural']}.{data['group']}", "annotations": dict(owner)},
            "status": {"storedVersions": list(stored)}}


def helm_secret(version, revision=3, status="deployed"):
    release = {"name": "karpenter", "chart": {"metadata": {"name": "karpenter", "version": version}}}
    payload = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return {"metadata": {"name": f"sh.helm.release.v1.karpenter.v{revision}",
                         "labels": {"owner": "helm", "name": "karpenter", "status": status, "version": str(revision)}},
            "data": {"release": base64.b64encode(payload.encode()).decode()}}


class FakeCluster(LocalServer):
    """GET-only fake of the API paths the pre-flight reads; records every request's method and path."""

    def __init__(self, crds=(), secrets=(), deployments=(), objects=None):
        self.crds = {c["metadata"]["name"]: c for c in crds}
        self.secrets, self.deployments, self.objects = list(secrets), list(deployments), objects or {}
        self.requests = []
        fake = self

        class Handler(JsonHandler):
            def _any(self):
                fake.requests.append((self.command, self.path))
                self._reply(405, {"kind": "Status", "code": 405, "message": "read-only fake"})

            do_POST = do_PUT = do_PATCH = do_DELETE = _any

            def do_GET(self):  # noqa: N802
                fake.requests.append(("GET", self.path))
                url = urlparse(self.path)
                parts = url.path.strip("/").split("/")
                query = parse_qs(url.query)
                if url.path.startswith("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"):
                    found = fake.crds.get(parts[-1])
                    return self._reply(200, found) if found else self._reply(404, {"kind": "Status", "code": 404})
                if parts[:2] == ["api", "v1"] and parts[-1] == "secrets":
                    assert query["labelSelector"] == ["owner=helm,name=karpenter"]
                    return self._reply(200, {"items": fake.secrets, "metadata": {}})
                if parts[:3] == ["apis", "apps", "v1"] and parts[-1] == "deployments":
                    return self._reply(200, {"items": fake.deployments, "metadata": {}})
                if parts[0] == "apis" and len(parts) == 4:
                    key = f"{parts[1]}/{parts[3]}"
                    if key in fake.objects:
                        return self._reply(200, {"items": fake.objects[key], "metadata": {}})
                return self._reply(404, {"kind": "Status", "code": 404})

        super().__init__(Handler)


def healthy_crds(version="1.14.1"):
    return [crd(stem) for stem in reference.release(version).crds]


def run(cluster, tmp_path, capsys, to="1.14.1", stack="dev"):
    with cluster:
        code = preflight.main([stack, "--to", to, "-o", "json", "--kubeconfig", cluster.kubeconfig(tmp_path),
                               "--project-dir", str(PROJECT_DIR)])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out else None)


def test_healthy_cluster_passes_and_reads_the_chart_from_the_helm_secret(tmp_path, capsys):
    cluster = FakeCluster(healthy_crds(), [helm_secret("1.14.1"), helm_secret("1.13.1", 2, "superseded")])
    code, report = run(cluster, tmp_path, capsys)
    assert code == 0 and report["problems"] == [] and report["warnings"] == []
    assert report["installed"] == {"chart": "1.14.1", "source": "helm release secret sh.helm.release.v1.karpenter.v3"}
    assert {c["status"] for c in report["crds"]} == {"ok"}
    assert {m for m, _ in cluster.requests} == {"GET"}


def test_stored_version_the_target_does_not_serve_is_a_problem(tmp_path, capsys):
    crds = healthy_crds()
    crds[-1] = crd("karpenter.sh_nodepools", stored=("v1beta1", "v1"))
    code, report = run(FakeCluster(crds, [helm_secret("1.14.1")]), tmp_path, capsys)
    assert code == 1
    [problem] = report["problems"]
    assert problem.startswith("CRD nodepools.karpenter.sh: status.storedVersions ['v1beta1', 'v1'] names v1beta1")
    assert next(c for c in report["crds"] if c["name"] == "nodepools.karpenter.sh")["status"] == "storedVersions"


def test_crd_not_owned_by_the_crd_release_is_a_problem(tmp_path, capsys):
    crds = healthy_crds()
    crds[0] = crd("autoscaling.x-k8s.io_capacitybuffers", owner={"meta.helm.sh/release-name": "karpenter"})
    code, report = run(FakeCluster(crds, [helm_secret("1.14.1")]), tmp_path, capsys)
    assert code == 1 and "invalid ownership metadata" in report["problems"][0]


def test_new_crd_absent_before_1_14_is_a_warning_and_chart_mismatch_warns(tmp_path, capsys):
    cluster = FakeCluster(healthy_crds("1.13.1"), [helm_secret("1.13.1")])
    code, report = run(cluster, tmp_path, capsys)
    assert code == 0
    assert any("capacitybuffers.autoscaling.x-k8s.io is not installed" in w for w in report["warnings"])
    assert any("runs chart 1.13.1" in w and "pins 1.14.1" in w for w in report["warnings"])


def test_chart_version_falls_back_to_the_deployment_label(tmp_path, capsys):
    deployment = {"metadata": {"name": "karpenter", "labels": {"helm.sh/chart": "karpenter-1.14.1"}}}
    code, report = run(FakeCluster(healthy_crds(), [], [deployment]), tmp_path, capsys)
    assert report["installed"] == {"chart": "1.14.1", "source": "deployment karpenter label helm.sh/chart"}


def test_objects_using_fields_the_target_drops_are_listed(tmp_path, capsys):
    """Downgrading to 1.12.2: an EC2NodeClass using 1.13's cpuOptions would lose it."""
    nodeclass = {"metadata": {"name": "nested"}, "spec": {
        "role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
        "cpuOptions": {"nestedVirtualization": "enabled"}}}
    cluster = FakeCluster(healthy_crds(), [helm_secret("1.13.1")],
                          objects={"karpenter.k8s.aws/ec2nodeclasses": [nodeclass]})
    tmp_stack = tmp_path / "p"
    from tests.harness import write_project
    write_project(tmp_stack, {"cluster": {"name": "c", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}},
                              "teams": [], "karpenter": {"version": "1.13.1"}}, {})
    with cluster:
        code = preflight.main(["test", "--to", "1.12.2", "-o", "json", "--kubeconfig", cluster.kubeconfig(tmp_path),
                               "--project-dir", str(tmp_stack)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["resources"] == [{"kind": "EC2NodeClass", "name": "nested", "path": "spec.cpuOptions"}]


def test_unreachable_api_server_exits_2_with_one_line(tmp_path, capsys):
    cluster = FakeCluster()
    kubeconfig = cluster.kubeconfig(tmp_path)
    cluster.server.server_close()  # nothing listens there any more
    code = preflight.main(["dev", "--to", "1.14.1", "--kubeconfig", kubeconfig, "--project-dir", str(PROJECT_DIR)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot reach the API server") and err.count("\n") == 1


def test_unknown_version_exits_2(capsys):
    assert preflight.main(["dev", "--to", "2.0.0", "--project-dir", str(PROJECT_DIR)]) == 2
    assert "not supported" in capsys.readouterr().err


def test_decode_helm_release_reads_helm3_secret_payload():
    assert preflight.decode_helm_release(helm_secret("1.12.2"))["chart"]["metadata"]["version"] == "1.12.2"
