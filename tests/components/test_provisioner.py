"""The provisioner component: image (ECR + docker-build, content-hash tag), IAM, RBAC, Deployment."""
import json
import shutil

import pulumi
import pytest

from components.cluster import ExistingCluster
from components.config.provisioner import ProvisionerConfig
from components.provisioner import (HASH_EXCLUDED_DIR_SUFFIXES, HASH_EXCLUDED_DIRS, HASH_EXCLUDED_FILE_SUFFIXES,
                                    IMAGE_SOURCES, PROVISIONER_DIR, Provisioner, advisor_rules, catalog_policy, content_files,
                                    content_hash, deployment_manifest, image_tag, pdb_manifest, repository_name,
                                    role_name, service_manifest)
from offline.monitor import run
from offline.placeholders import PlaceholderMocks
from tests.harness import manifests, platform_from, render, run_component, stack_platform

READ = ["get", "list", "watch"]
ODIGOS_TAINTING = {"odigos": {"enabled": True, "mountMethod": "k8s-host-path"}}


def declare(settings=None, config=None):
    cfg = config or platform_from(settings={"provisioner": {"enabled": True}, **(settings or {})})
    holder = {}

    def program():
        holder["component"] = Provisioner("provisioner", cfg, ExistingCluster("cluster", cfg.settings.cluster))
        pulumi.export("imageRef", holder["component"].image_ref)
    return run_component(program), holder["component"]


def by_name(capture, kind):
    return {m["metadata"]["name"]: m for m in manifests(capture, kind)}


# --- the content hash ----------------------------------------------------------------------

@pytest.fixture
def package(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("x = 1\n")
    (root / "sub" / "mod.py").write_text("y = 2\n")
    (root / "Dockerfile").write_text("FROM scratch\n")
    return root


def test_content_hash_is_stable_and_independent_of_location(package, tmp_path):
    copy = shutil.copytree(package, tmp_path / "elsewhere")
    assert content_hash(package) == content_hash(package) == content_hash(copy)
    assert len(content_hash(package)) == 64


def test_content_hash_ignores_caches_and_build_leftovers(package):
    before = content_hash(package)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (package / "sub" / "mod.pyc").write_bytes(b"\0")
    (package / "pkg.egg-info").mkdir()
    (package / "pkg.egg-info" / "PKG-INFO").write_text("Name: pkg\n")
    (package / "build" / "lib").mkdir(parents=True)
    (package / "build" / "lib" / "copy.py").write_text("x = 1\n")
    for linter in (".ruff_cache", ".mypy_cache"):  # `make lint` writes them beside the sources
        (package / "sub" / linter / "0.5").mkdir(parents=True)
        (package / "sub" / linter / "0.5" / "entry").write_bytes(b"\1")
    assert content_hash(package) == before
    assert [p.relative_to(package).as_posix() for p in content_files(package)] == [
        "Dockerfile", "__init__.py", "sub/mod.py"]


def test_content_hash_changes_with_content_rename_and_dockerfile(package):
    before = content_hash(package)
    (package / "sub" / "mod.py").write_text("y = 3\n")
    edited = content_hash(package)
    (package / "sub" / "mod.py").rename(package / "sub" / "other.py")
    renamed = content_hash(package)
    (package / "Dockerfile").write_text("FROM scratch\nUSER 1\n")
    assert len({before, edited, renamed, content_hash(package)}) == 4


def test_image_tag_depends_on_platforms_not_their_order():
    assert image_tag("abc", ["linux/amd64", "linux/arm64"]) == image_tag("abc", ["linux/arm64", "linux/amd64"])
    assert image_tag("abc", ["linux/amd64"]) != image_tag("abc", ["linux/amd64", "linux/arm64"])
    assert image_tag("abc", ["linux/amd64"]) != image_tag("abd", ["linux/amd64"])
    assert len(image_tag("abc", ["linux/amd64"])) == 32


def test_dockerignore_leaves_out_everything_the_hash_leaves_out():
    # Otherwise a file in the build context but not in the hash could change the image under an
    # immutable tag that already exists, and the push would fail.
    ignored = {line.strip() for line in (PROVISIONER_DIR / "Dockerfile.dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    expected = {"*", "!kubefacts", "!provisioner"} | {f"**/{d}" for d in HASH_EXCLUDED_DIRS}
    expected |= {f"**/*{s}" for s in HASH_EXCLUDED_DIR_SUFFIXES + HASH_EXCLUDED_FILE_SUFFIXES}
    assert ignored == expected


def test_repository_name_is_valid_for_ecr():
    assert repository_name("acme-dev") == "karpenter-platform/acme-dev/provisioner"
    assert repository_name("Team_A--Prod") == "karpenter-platform/team-a-prod/provisioner"


# --- IAM ---------------------------------------------------------------------------------

def test_catalog_policy_is_read_only_pricing_and_instance_types():
    statements = catalog_policy("eu-west-1")["Statement"]
    assert sorted(a for s in statements for a in s["Action"]) == [
        "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeSpotPriceHistory",
        "pricing:GetProducts"]
    assert {s["Effect"] for s in statements} == {"Allow"}
    assert statements[0]["Condition"] == {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}


def test_role_name_fits_iam_limit():
    assert role_name("acme-dev") == "acme-dev-provisioner"
    assert len(role_name("c" * 100)) == 64


# --- RBAC --------------------------------------------------------------------------------

def test_advisor_rules_read_watched_kinds_and_write_only_events():
    assert advisor_rules("advisor") == [
        {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "persistentvolumes", "pods"],
         "verbs": READ},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": READ},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": READ},
        {"apiGroups": ["storage.k8s.io"], "resources": ["csinodes", "storageclasses"], "verbs": READ},
        {"apiGroups": ["karpenter.sh"], "resources": ["nodeclaims", "nodeoverlays", "nodepools"], "verbs": READ},
        {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": READ},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]


def test_metrics_only_rules_write_nothing():
    rules = advisor_rules("metrics-only")
    assert rules and all(rule["verbs"] == READ for rule in rules)


def test_component_binds_advisor_role_to_advisor_service_account_only():
    capture, _ = declare(ODIGOS_TAINTING)
    roles = by_name(capture, "ClusterRole")
    bindings = by_name(capture, "ClusterRoleBinding")
    assert sorted(roles) == sorted(bindings) == ["karpenter-platform-provisioner"]
    assert roles["karpenter-platform-provisioner"]["rules"] == advisor_rules("advisor")
    binding = bindings["karpenter-platform-provisioner"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "karpenter-platform-provisioner"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "provisioner", "namespace": "karpenter-provisioner"}]


def test_component_metrics_only_role_has_no_write_verb():
    capture, _ = declare({"provisioner": {"enabled": True, "mode": "metrics-only"}})
    rules = by_name(capture, "ClusterRole")["karpenter-platform-provisioner"]["rules"]
    assert {verb for rule in rules for verb in rule["verbs"]} == set(READ)


# --- the Deployment ----------------------------------------------------------------------

def test_deployment_security_context_hardened():
    spec = deployment_manifest(ProvisionerConfig(enabled=True), image="img", region="us-east-1")["spec"]["template"]["spec"]
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                       "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    container = spec["containers"][0]
    assert container["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True, "privileged": False, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert spec["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]


def test_deployment_probes_resources_and_args():
    config = ProvisionerConfig(enabled=True, mode="metrics-only", live_catalog=False,
                               resources={"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}})
    deployment = deployment_manifest(config, image="repo@sha256:abc", region="eu-west-1")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "repo@sha256:abc"
    assert container["args"] == ["serve", "--mode", "metrics-only", "--region", "eu-west-1", "--port", "8080",
                                 "--catalog", "bundled", "--log-level", "info"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
    assert container["resources"] == {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "provisioner"


def test_deployment_runs_only_on_architectures_the_image_has():
    def arches(platforms):
        spec = deployment_manifest(ProvisionerConfig(enabled=True, platforms=platforms), image="i", region="r")
        terms = spec["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        return terms[0]["matchExpressions"][0]["values"]
    assert arches(["linux/amd64"]) == ["amd64"]
    assert arches(["linux/arm64", "linux/amd64"]) == ["amd64", "arm64"]


def test_service_exposes_metrics_port_and_pdb_never_blocks_drains():
    service = service_manifest("ns")["spec"]
    assert service["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}]
    assert pdb_manifest("ns")["spec"]["maxUnavailable"] == 1
    assert service["selector"] == pdb_manifest("ns")["spec"]["selector"]["matchLabels"]


# --- the component under mocks -----------------------------------------------------------

def test_component_declares_immutable_scanned_repository():
    capture, _ = declare()
    repo = capture.named("provisioner-repository").inputs
    assert repo == {"name": "karpenter-platform/test-cluster/provisioner", "imageTagMutability": "IMMUTABLE",
                    "imageScanningConfiguration": {"scanOnPush": True}, "forceDelete": False, "region": "us-east-1"}
    policy = json.loads(capture.named("provisioner-repository-lifecycle").inputs["policy"])
    assert policy["rules"][0]["selection"]["countNumber"] == 30


def test_component_builds_and_pushes_image_tagged_with_content_hash():
    capture, component = declare({"provisioner": {"enabled": True, "platforms": ["linux/amd64", "linux/arm64"]}})
    image = capture.named("provisioner-image").inputs
    tag = image_tag(content_hash(*IMAGE_SOURCES), ["linux/amd64", "linux/arm64"])
    registry = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    assert image["context"] == {"location": "."}
    assert image["dockerfile"] == {"location": "provisioner/Dockerfile"}
    assert image["platforms"] == ["linux/amd64", "linux/arm64"]
    assert image["push"] is True
    assert image["buildOnPreview"] is False
    assert image["tags"] == [f"{registry}/karpenter-platform/test-cluster/provisioner:{tag}"]
    assert image["registries"] == [{"address": registry, "username": "AWS", "password": "[secret]"}]
    assert component.image_tag == tag


def test_component_uses_ecr_token_for_the_repository_registry():
    mocks = PlaceholderMocks("us-east-1")
    cfg = platform_from(settings={"provisioner": {"enabled": True}})
    run(lambda: Provisioner("provisioner", cfg, ExistingCluster("cluster", cfg.settings.cluster)), mocks)
    assert "aws:ecr/getAuthorizationToken:getAuthorizationToken" in mocks.calls


def test_component_deployment_uses_pushed_image_and_waits_for_rbac():
    capture, _ = declare()
    deployment = capture.named("provisioner-deployment")
    image = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == capture.outputs["imageRef"]  # the pushed image's ref, with its digest
    assert "@sha256:" in image
    names = {r.urn: r.name for r in capture.resources}
    assert {names[u] for u in deployment.options["dependsOn"]} >= {
        "provisioner-namespace", "provisioner-service-account", "provisioner-cluster-role-binding",
        "provisioner-pod-identity"}


def test_component_pod_identity_by_default():
    capture, component = declare()
    association = capture.named("provisioner-pod-identity").inputs
    assert association == {"clusterName": "test-cluster", "namespace": "karpenter-provisioner",
                           "serviceAccount": "provisioner", "roleArn": "arn:aws:iam::123456789012:role/test-cluster-provisioner",
                           "region": "us-east-1"}
    trust = json.loads(capture.named("provisioner-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert "annotations" not in by_name(capture, "ServiceAccount")["provisioner"]["metadata"]
    assert json.loads(capture.named("provisioner-catalog").inputs["policy"]) == catalog_policy("us-east-1")


def test_component_irsa_annotates_service_account_and_trusts_it_only():
    capture, _ = declare({"karpenter": {"identity": "irsa"}})
    assert not capture.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    account = by_name(capture, "ServiceAccount")["provisioner"]
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/test-cluster-provisioner"}
    condition = json.loads(capture.named("provisioner-role").inputs["assumeRolePolicy"])["Statement"][0]["Condition"]
    assert "system:serviceaccount:karpenter-provisioner:provisioner" in condition["StringEquals"].values()


def test_component_without_live_catalog_has_no_aws_identity():
    capture, component = declare({"provisioner": {"enabled": True, "liveCatalog": False}})
    assert not capture.of_type("aws:iam/role:Role") and not capture.of_type("aws:iam/rolePolicy:RolePolicy")
    assert component.role_arn is None
    args = manifests(capture, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--catalog") + 1] == "bundled"


def test_component_role_gets_the_stack_permissions_boundary():
    boundary = "arn:aws:iam::123456789012:policy/platform-boundary"
    capture, _ = declare({"karpenter": {"permissionsBoundary": boundary}})
    assert capture.named("provisioner-role").inputs["permissionsBoundary"] == boundary


def test_component_children_are_parented_to_it():
    capture, _ = declare(ODIGOS_TAINTING)
    component = capture.named("provisioner", "karpenter-platform:index:Provisioner")
    children = [r for r in capture.resources if r.type not in ("karpenter-platform:index:Provisioner",)
                and not r.name.startswith("cluster")]
    assert children and all(r.parent == component.urn for r in children)


def test_component_namespaced_objects_live_in_its_namespace():
    capture, _ = declare({"provisioner": {"enabled": True, "namespace": "advisor"}})
    for kind in ("ServiceAccount", "Deployment", "Service", "PodDisruptionBudget"):
        assert {m["metadata"]["namespace"] for m in manifests(capture, kind)} == {"advisor"}
    assert [m["metadata"]["name"] for m in manifests(capture, "Namespace")] == ["advisor"]


def test_dev_stack_config_gives_image_rbac_and_deployment():
    config = stack_platform("dev")
    assert config.settings.provisioner.enabled
    capture, _ = declare(config=config)
    assert len(capture.of_type("docker-build:index:Image")) == 1
    assert sorted(by_name(capture, "ClusterRole")) == ["karpenter-platform-provisioner"]
    assert [m["metadata"]["name"] for m in manifests(capture, "Deployment")] == ["provisioner"]


def test_dev_render_contains_provisioner_when_wired():
    capture = render("dev")
    if not capture.of_type("karpenter-platform:index:Provisioner"):
        pytest.skip("components.provisioner.Provisioner is not wired into __main__.py yet")
    assert len(capture.of_type("docker-build:index:Image")) == 1
    assert "karpenter-platform-provisioner" in by_name(capture, "ClusterRole")
    deployment = by_name(capture, "Deployment")["provisioner"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


def test_dev_render_lets_only_prepare_job_patch_nodes():
    """Across the whole stack: patch on nodes is granted to the Odigos prepare Job's service
    account and to nothing else; the prepare Job runs the provisioner image once it is wired."""
    capture = render("dev")
    if not capture.of_type("karpenter-platform:index:Provisioner"):
        pytest.skip("components.provisioner.Provisioner is not wired into __main__.py yet")
    roles = by_name(capture, "ClusterRole")
    patching = sorted(name for name, role in roles.items() for rule in role.get("rules") or []
                      if "nodes" in rule.get("resources", []) and {"patch", "update", "*"} & set(rule["verbs"]))
    subjects = sorted((s["name"], s["namespace"]) for binding in manifests(capture, "ClusterRoleBinding")
                      if binding["roleRef"]["name"] in patching for s in binding["subjects"])
    assert subjects == [("odigos-prepare-nodes", "odigos-system")]
    [job] = manifests(capture, "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["provisioner", "odigos-prepare-nodes"]
    assert container["image"] == capture.outputs["provisionerImage"]


def test_catalog_policy_allows_exactly_what_the_live_catalog_calls():
    import re as _re
    source = (PROVISIONER_DIR / "catalog" / "aws.py").read_text()
    calls = set(_re.findall(r"\b(ec2|pricing)\.(describe_\w+|get_\w+)\b", source))
    actions = {f"{service}:{''.join(part.title() for part in call.split('_'))}" for service, call in calls}
    granted = {a for s in catalog_policy("us-east-1")["Statement"] for a in s["Action"]}
    assert actions == granted


def test_advisor_rules_cover_every_watched_kind():
    from provisioner.controller.kinds import WATCHED
    readable = {(group, resource) for rule in advisor_rules("advisor") if rule["verbs"] == READ
                for group in rule["apiGroups"] for resource in rule["resources"]}
    assert readable == {(k.group, k.plural) for k in WATCHED}


# --- who may reach the metrics port ------------------------------------------------------------

def test_network_policy_admits_only_the_scraper_to_the_metrics_port():
    """The metrics server was open to every pod in the cluster (400 idle sockets held 415 threads);
    a NetworkPolicy now selects the advisor's pods and admits ingress only from the scrapers, only
    on the metrics port (the kubelet's probes come from the node, which NetworkPolicy admits)."""
    capture, _ = declare()
    (policy,) = manifests(capture, "NetworkPolicy")
    (deployment,) = manifests(capture, "Deployment")
    assert policy["metadata"]["namespace"] == "karpenter-provisioner"
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{
        "from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}],
        "ports": [{"port": 8080, "protocol": "TCP"}]}]
    ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert [p["containerPort"] for p in ports] == [8080]


def test_network_policy_takes_the_configured_scrapers():
    scrapers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    capture, _ = declare({"provisioner": {"enabled": True, "metricsScrapers": scrapers}})
    (policy,) = manifests(capture, "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"] == scrapers


@pytest.mark.parametrize("scrapers,message", [
    ([], "at least one scraper"),
    ([{"pods": {}}], "a NetworkPolicy peer has namespaceSelector, podSelector or ipBlock"),
    ([{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}], "ipBlock stands alone"),
])
def test_metrics_scrapers_that_are_not_network_policy_peers_are_refused(scrapers, message):
    with pytest.raises(ValueError, match=message):
        ProvisionerConfig(enabled=True, metricsScrapers=scrapers)
