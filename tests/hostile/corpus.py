"""Hostile inputs of every kind issue 12 lists (and some more), shared by the tests and the benchmark.

Each config case is (id, files, expected): `files` maps paths in a throwaway project to text or
bytes written over a valid one-team project; `expected` are substrings the exit-2 message must hold
(the file and the key path). Manifest cases are (id, text or bytes, expected) for `simulate`.
"""
from __future__ import annotations

import codecs
from pathlib import Path

import yaml

from tests.harness import PROJECT_DIR

TEAM = "stacks/teams/web.yaml"
STACK = "stacks/Pulumi.test.yaml"
SETTINGS = {"cluster": {"name": "test-cluster", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}},
            "teams": ["web"]}
POOL = {"name": "pool", "limits": {"cpu": "10", "memory": "40Gi"}}


def stack_text(settings: dict | None = None, raw: str = "") -> str:
    config = {f"karpenter-platform:{k}": v for k, v in (settings or SETTINGS).items()}
    return yaml.safe_dump({"config": config}) + raw


def team_text(**pool_changes) -> str:
    return yaml.safe_dump({"name": "web", "nodePools": [{**POOL, **pool_changes}]})


def write_project(root: Path, files: dict) -> Path:
    """A valid one-team project in `root` (Pulumi.yaml, the stack file, the team file) with `files`
    (path -> text or bytes) written over it; `root`."""
    (root / "stacks" / "teams").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (root / STACK).write_text(stack_text())
    if not any(relative.startswith(TEAM + "/") for relative in files):
        (root / TEAM).write_text(team_text())
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return root


def _bomb(levels: int = 9) -> str:
    text = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, levels + 1):
        text += f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
    return text


def _deep_list(depth: int) -> str:
    return "[" * depth + "]" * depth


CONFIG_CASES = [
    ("utf16-no-bom", {TEAM: team_text().encode("utf-16-le")}, [TEAM, "UTF-16"]),
    ("latin1", {TEAM: ("owner: 'Jos\u00e9'\n" + team_text()).encode("latin-1")}, [TEAM, "not UTF-8"]),
    ("binary", {TEAM: b"\x00\x01\x02\x03binary"}, [TEAM, "binary"]),
    ("exclude-not-list", {TEAM: yaml.safe_dump({"nodePools": [POOL], "environments": {"test": {"excludeNodePools": 5}}})},
     [TEAM, "environments.test.excludeNodePools"]),
    ("environments-list", {TEAM: yaml.safe_dump({"nodePools": [POOL], "environments": [1]})}, [TEAM, "environments"]),
    ("pool-name-list", {TEAM: team_text(name=["a"])}, [TEAM, "nodePools[0].name"]),
    ("requirement-key-list", {TEAM: team_text(requirements=[{"key": ["a"], "operator": "Exists"}])},
     [TEAM, "nodePools[0].requirements[0].key"]),
    ("requirement-not-mapping", {TEAM: team_text(requirements=[5])}, [TEAM, "nodePools[0].requirements[0]"]),
    ("non-string-config-key", {STACK: stack_text(raw="  1: 2\n")}, [STACK, "config.1", "must be a string"]),
    ("collection-config-key", {STACK: stack_text(raw="  [a]: b\n")}, [STACK, "config", "must be a string"]),
    ("flow-config-key-bool", {STACK: stack_text(raw="  karpenter-platform:tags: {true: x}\n")},
     [STACK, "config.karpenter-platform:tags.true", "must be a string"]),
    ("non-string-label-key", {TEAM: team_text(labels={1: "x"})}, [TEAM, "nodePools[0].labels.1", "must be a string"]),
    ("cpu-exponent", {TEAM: team_text(limits={"cpu": "1e9999999"})}, [TEAM, "nodePools[0].limits.cpu"]),
    ("negative-limit", {TEAM: team_text(limits={"cpu": "-1"})}, [TEAM, "nodePools[0].limits.cpu", "negative"]),
    ("deep-list", {TEAM: "name: web\nnodePools: " + _deep_list(1000) + "\n"}, [TEAM, "nested deeper"]),
    ("deep-list-100k", {TEAM: "name: web\nnodePools: " + _deep_list(100_000) + "\n"}, [TEAM, "nested deeper"]),
    ("alias-bomb-unused", {STACK: stack_text() + "unused:\n  " + _bomb().replace("\n", "\n  ")},
     [STACK, "alias"]),
    ("alias-cycle", {TEAM: "name: web\nnodePools: &p [*p]\n"}, [TEAM, "cycle"]),
    ("set-tag", {TEAM: "name: web\nnodePools: !!set {a, b}\n"}, [TEAM, "tag"]),
    ("duplicate-key", {TEAM: "name: web\nname: web\nnodePools: []\n"}, [TEAM, "duplicate key"]),
    ("long-team-name", {STACK: stack_text({**SETTINGS, "teams": ["a" * 70_000]})}, [STACK, "karpenter-platform:teams[0]"]),
    ("name-newline", {TEAM: team_text(name="batch-jobs\n")}, [TEAM, "nodePools[0].name"]),
    ("label-newline", {TEAM: team_text(labels={"app": "web\n"})}, [TEAM, "nodePools[0].labels"]),
    ("kubelet-domain-label", {TEAM: team_text(labels={"kubernetes.io/role": "x"})}, [TEAM, "nodePools[0].labels", "kubelet"]),
    ("taint-twice", {TEAM: team_text(taints=[{"key": "a", "effect": "NoSchedule"}],
                                      startupTaints=[{"key": "a", "effect": "NoSchedule"}])}, [TEAM, "nodePools[0]", "twice"]),
    ("annotation-key", {TEAM: team_text(annotations={"bad key!": "x"})}, [TEAM, "nodePools[0].annotations"]),
    ("annotations-too-big", {TEAM: team_text(annotations={"a": "x" * (256 * 1024 + 1)})}, [TEAM, "256"]),
    ("too-many-requirements", {TEAM: team_text(requirements=[{"key": f"k{i}", "operator": "Exists"} for i in range(101)])},
     [TEAM, "nodePools[0].requirements", "100"]),
    ("too-many-labels", {TEAM: team_text(labels={f"k{i}": "v" for i in range(100)})}, [TEAM, "nodePools[0].labels"]),
    ("too-many-budgets", {TEAM: team_text(disruption={"budgets": [{"nodes": "1"}] * 51})},
     [TEAM, "nodePools[0].disruption.budgets"]),
    ("gt-beyond-int64", {TEAM: team_text(requirements=[{"key": "x", "operator": "Gt", "values": ["9" * 20]}])},
     [TEAM, "nodePools[0].requirements[0]", "int64"]),
    ("duplicate-reasons", {TEAM: team_text(disruption={"budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]})},
     [TEAM, "reasons"]),
    ("ec2nodeclass-requirement", {TEAM: team_text(requirements=[{"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "Exists"}])},
     [TEAM, "nodePools[0].requirements[0].key"]),
    ("capacity-type-ondemand", {TEAM: team_text(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In",
                                                               "values": ["ondemand"]}])}, [TEAM, "on-demand"]),
    ("tenancy-unknown", {TEAM: team_text(requirements=[{"key": "karpenter.k8s.aws/instance-tenancy", "operator": "In",
                                                        "values": ["host"]}])}, [TEAM, "instance-tenancy"]),
    ("cron-garbage", {TEAM: team_text(disruption={"budgets": [{"nodes": "1", "schedule": "a b c d e", "duration": "1h"}]})},
     [TEAM, "schedule"]),
    ("alias-without-v", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"amiAlias": "al2023@20251117"}}})},
     [STACK, "nodeClasses.default.amiAlias"]),
    ("aws-tag", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"tags": {"aws:owner": "x"}}}})},
     [STACK, "nodeClasses.default.tags"]),
    ("iops-gp2", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {"type": "gp2", "iops": 3000}}}})},
     [STACK, "rootVolume"]),
    ("io2-no-iops", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {"type": "io2"}}}})},
     [STACK, "rootVolume"]),
    ("kms-unencrypted", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {
        "encrypted": False, "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/x"}}}})}, [STACK, "rootVolume"]),
    ("eviction-hard-value", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"kubelet": {
        "evictionHard": {"memory.available": "lots"}}}}})}, [STACK, "evictionHard"]),
    ("big-int", {TEAM: "name: web\nnodePools: " + "9" * 5000 + "\n"}, [TEAM]),
    ("infinite-float", {TEAM: team_text(weight=float("inf"))}, [TEAM, "finite"]),
    ("folder-as-team", {f"{TEAM}/x": "a: 1"}, [TEAM, "folder"]),
    # second round (issue 22): what Karpenter, Go or EC2 read differently
    ("cron-never-fires", {TEAM: team_text(disruption={"budgets": [{"nodes": "0", "schedule": "0 0 31 2 *",
                                                                   "duration": "1h"}]})},
     [TEAM, "nodePools[0].disruption.budgets[0].schedule", "never fires"]),
    ("expire-after-int64", {TEAM: team_text(expireAfter="2562048h")},
     [TEAM, "nodePools[0].expireAfter", "2562047h47m16.854775807s"]),
    ("consolidate-after-int64", {TEAM: team_text(disruption={"consolidateAfter": "2562048h"})},
     [TEAM, "nodePools[0].disruption.consolidateAfter", "2562047h47m16.854775807s"]),
    ("grace-period-int64", {TEAM: team_text(terminationGracePeriod="2562048h")},
     [TEAM, "nodePools[0].terminationGracePeriod", "2562047h47m16.854775807s"]),
    ("budget-duration-int64", {TEAM: team_text(disruption={"budgets": [{"nodes": "0", "schedule": "@daily",
                                                                        "duration": "2562048h"}]})},
     [TEAM, "nodePools[0].disruption.budgets[0].duration", "2562047h47m16.854775807s"]),
    ("budget-infinity", {TEAM: yaml.safe_dump({"name": "web", "budget": {"test": "Infinity"}, "nodePools": [POOL]})},
     [TEAM, "budget.test", "finite"]),
    ("budget-1e999", {TEAM: yaml.safe_dump({"name": "web", "budget": {"test": "1e999"}, "nodePools": [POOL]})},
     [TEAM, "budget.test", "finite"]),
    ("budget-nan", {TEAM: "name: web\nbudget: {test: .nan}\n" + yaml.safe_dump({"nodePools": [POOL]})},
     [TEAM, "line 2", "finite"]),  # the YAML reader refuses .nan and .inf itself
    ("gp3-throughput-per-iops", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {
        "iops": 3000, "throughput": 1000}}}})}, [STACK, "nodeClasses.default.rootVolume", "0.25 MiB/s per IOPS"]),
    ("gp3-iops-per-gib", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {
        "size": "20Gi", "iops": 16000}}}})}, [STACK, "nodeClasses.default.rootVolume", "500 IOPS per GiB"]),
    ("gp3-mapping-throughput", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi", "volumeType": "gp3",
                                                                "throughput": 1000}}]}}})},
     [STACK, "nodeClasses.default.blockDeviceMappings[0].ebs", "0.25 MiB/s per IOPS"]),
    ("root-below-ami-snapshot", {STACK: stack_text({**SETTINGS, "nodeClasses": {"default": {"rootVolume": {
        "size": "10Gi"}}}})}, [STACK, "nodeClasses.default", "rootVolume.size", "20 GiB root snapshot"]),
    ("gpu-limit-fraction", {TEAM: team_text(limits={"cpu": "10", "nvidia.com/gpu": "0.5"})},
     [TEAM, "nodePools[0].limits", "nvidia.com/gpu", "integer"]),
    ("gpu-largest-pod-fraction", {TEAM: team_text(largestPod={"cpu": "1", "nvidia.com/gpu": "500m"})},
     [TEAM, "nodePools[0].largestPod", "nvidia.com/gpu", "integer"]),
    # Caught only by the render's CRD check, or a traceback, before every render checked them in the config.
    ("owner-300kb", {TEAM: yaml.safe_dump({"name": "web", "owner": "x" * 300_000, "nodePools": [POOL]})},
     [TEAM, "owner", "256 KiB"]),
    ("odiglet-tolerations-int", {STACK: stack_text({**SETTINGS, "odigos": {"enabled": True, "mountMethod": "k8s-host-path",
                                                                           "values": {"odiglet": {"tolerations": 5}}}})},
     [STACK, "karpenter-platform:odigos", "values.odiglet.tolerations: expected a list"]),
    ("environment-naming-no-stack", {TEAM: yaml.safe_dump({"nodePools": [POOL], "budget": {"tset": 1}})},
     [TEAM, "budget.tset", "did you mean 'test'?"]),
]

UTF16_BOM_TEAM = codecs.BOM_UTF16_LE + team_text().encode("utf-16-le")


def _deployment(**spec_changes) -> dict:
    container = {"name": "app", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [container]}}}
    spec.update(spec_changes)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "default"},
            "spec": spec}


def _with_cpu(cpu) -> str:
    deployment = _deployment()
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return yaml.safe_dump(deployment)


def _with_spread(**constraint) -> str:
    deployment = _deployment()
    deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
        {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}, **constraint}]
    return yaml.safe_dump(deployment)


def _with_requests(requests: dict) -> str:
    deployment = _deployment()
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = requests
    return yaml.safe_dump(deployment)


def _nodepool(**spec_changes) -> dict:
    spec = {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                   "name": "default"}, "requirements": []}}, **spec_changes}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, "spec": spec}


REQ = "spec.template.spec.containers[0].resources.requests.cpu"
MANIFEST_CASES = [
    ("cpu-1e18", _with_cpu("1e18"), [REQ]),
    ("cpu-inf", _with_cpu("inf"), [REQ]),
    ("cpu-exponent", _with_cpu("1e99999999"), [REQ]),
    ("cpu-negative", _with_cpu("-1"), [REQ, "negative"]),
    ("cpu-list", _with_cpu([]), [REQ]),
    ("kind-list", yaml.safe_dump({**_deployment(), "kind": ["Deployment"]}), ["kind"]),
    ("set-tag", "apiVersion: v1\nkind: Pod\nmetadata: !!set {a, b}\n", ["tag"]),
    ("number-label-key", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {1: x}}\n"
     "spec: {containers: [{name: a}]}\n", ["metadata.labels.1", "must be a string"]),
    ("list-as-key", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {[a]: b}\n", ["spec", "must be a string"]),
    ("alias-cycle", "apiVersion: v1\nkind: List\nitems: &i [*i]\n", ["cycle"]),
    ("utf16-no-bom", yaml.safe_dump(_deployment()).encode("utf-16-le"), ["UTF-16"]),
    ("replicas-10m", yaml.safe_dump(_deployment(replicas=10_000_000)), ["spec.replicas", "--max-pods"]),
    ("replicas-negative", yaml.safe_dump(_deployment(replicas=-3)), ["spec.replicas"]),
    ("pod-list-200k", None, ["--max-pods"]),
    ("deep-mapping-100k", "a: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n", ["nested deeper"]),
    ("max-skew-0", _with_spread(maxSkew=0), ["maxSkew"]),
    ("min-domains-0", _with_spread(maxSkew=1, minDomains=0), ["minDomains"]),
    ("alias-bomb", _bomb(), ["alias"]),
    ("binary", b"\x7fELF\x00\x00", ["binary"]),
    # second round (issue 22)
    ("nodepool-weight-1000", yaml.safe_dump(_nodepool(weight=1000)), ["spec.weight", "maximum of 100"]),
    ("nodepool-weight-0", yaml.safe_dump(_nodepool(weight=0)), ["spec.weight", "minimum of 1"]),
    ("nodepool-gpu-limit-fraction", yaml.safe_dump(_nodepool(limits={"nvidia.com/gpu": "0.5"})),
     ["spec.limits.nvidia.com/gpu", "integer"]),
    ("gpu-request-fraction", _with_requests({"cpu": "1", "nvidia.com/gpu": "0.5"}),
     ["resources.requests.nvidia.com/gpu", "integer"]),
    ("nodeoverlay-price-inf", yaml.safe_dump({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                                              "metadata": {"name": "o"}, "spec": {"price": "inf", "requirements": []}}),
     ["spec.price"]),
    ("deployment-twice-different", yaml.safe_dump_all([_deployment(), _deployment(replicas=5)]),
     ["metadata.name", "twice with different specs"]),
]


NEGATIVE_PRICE_CATALOG = ('{"instance_types": [{"name": "m5.large", "vcpu": 2, "memory_mib": 8192, '
                          '"price_od_usd_hour": -0.096}]}')


def never_firing_budget_snapshot(duration: str = "2562047h") -> str:
    """examples/snapshots/small-cluster.yaml with every NodePool's budgets replaced by one `nodes: "0"`
    window that never fires (`0 0 31 2 *`) at the longest duration Karpenter reads: `consolidate`
    must answer at once, and plan nothing (Karpenter holds such a budget always active)."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "snapshots" / "small-cluster.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "NodePool":
            doc["spec"].setdefault("disruption", {})["budgets"] = [
                {"nodes": "0", "schedule": "0 0 31 2 *", "duration": duration}]
    return yaml.safe_dump_all(docs)


def pod_list(count: int) -> str:
    """A List of `count` pods as flow YAML (about 100 bytes a pod)."""
    item = ('{apiVersion: v1, kind: Pod, metadata: {name: p%d, namespace: default}, spec: {containers: '
            '[{name: a, resources: {requests: {cpu: 10m}}}]}}')
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(f"- {item % i}\n" for i in range(count))


def block_pod_list(count: int) -> str:
    """The same List in block style, as `kubectl get pods -o yaml` writes it (about 170 bytes a pod)."""
    item = ("- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p%d\n    namespace: default\n  spec:\n"
            "    containers:\n    - name: a\n      resources:\n        requests:\n          cpu: 10m\n")
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(item % i for i in range(count))


def flow_pod_list(count: int) -> str:
    """The same List as one flow sequence (`items: [{...}, {...}]`): no line marks an item."""
    item = ('{apiVersion: v1, kind: Pod, metadata: {name: p%d, namespace: default}, spec: {containers: '
            '[{name: a, resources: {requests: {cpu: 10m}}}]}}')
    return "apiVersion: v1\nkind: List\nitems: [\n" + ",\n".join(item % i for i in range(count)) + "]\n"


def json_pod_list(count: int) -> str:
    """The same List as compact JSON on one line (`kubectl get pods -o json | jq -c`)."""
    import json
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
         "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "10m"}}}]}} for i in range(count)]},
        separators=(",", ":"))


def one_line_flow_pod_list(count: int) -> str:
    """The flow sequence with every item on one line (`items: [{...}, {...}, ...]`)."""
    return flow_pod_list(count).replace(",\n", ", ")


# -- files that are not regular files (issue 22) -------------------------------------------------------

def _fifo(path) -> None:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


FILE_TYPE_IDS = ("fifo-team-file", "fifo-stack-file", "fifo-manifest", "fifo-in-manifest-folder", "fifo-catalog",
                 "fifo-build-resources", "fifo-policy-config", "ansi-file-name")


def file_type_cases(root) -> list[tuple[str, str, list[str], list[str]]]:
    """(id, module, argv, expected) over files made under `root` (a pathlib.Path): a named pipe
    where a stack file, a team file, a `-f` input (alone or in a folder), a `--catalog`, a build's
    resources.json or a policy config is read; each hung the command, and is now exit 2 naming it.
    A manifest whose file name holds an ANSI escape is shown escaped."""
    import pathlib

    root = pathlib.Path(root)
    cases = []
    for case_id, fifo in (("fifo-team-file", TEAM), ("fifo-stack-file", STACK)):
        project = root / case_id
        (project / "stacks" / "teams").mkdir(parents=True)
        (project / "Pulumi.yaml").write_text(
            "name: karpenter-platform\nruntime: python\nconfig: {}\n")
        for relative, text in ((STACK, stack_text()), (TEAM, team_text())):
            if relative != fifo:
                (project / relative).write_text(text)
        _fifo(project / fifo)
        cases.append((case_id, "offline.render", ["test", "--project-dir", str(project), "--out", str(project / "out")],
                      [fifo, "named pipe"]))
    _fifo(root / "pipe.yaml")
    cases.append(("fifo-manifest", "provisioner", ["simulate", "-f", str(root / "pipe.yaml")], ["pipe.yaml", "named pipe"]))
    _fifo(root / "folder" / "b.yaml")
    (root / "folder" / "a.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    cases.append(("fifo-in-manifest-folder", "provisioner", ["simulate", "-f", str(root / "folder")],
                  ["folder/b.yaml", "named pipe"]))
    (root / "empty.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    cases.append(("fifo-catalog", "provisioner", ["simulate", "-f", str(root / "empty.yaml"), "--catalog",
                                                  str(root / "pipe.yaml")], ["pipe.yaml", "named pipe"]))
    _fifo(root / "build" / "resources.json")
    cases.append(("fifo-build-resources", "policies.check", [str(root / "build")], ["resources.json", "named pipe"]))
    (root / "build-ok").mkdir()
    (root / "build-ok" / "resources.json").write_text('[{"type": "a", "name": "b", "inputs": {}}]')
    cases.append(("fifo-policy-config", "policies.check", [str(root / "build-ok"), "--config", str(root / "pipe.yaml")],
                  ["pipe.yaml", "named pipe"]))
    escaped = root / "esc" / "team\x1b[2J\x1b[31m.yaml"
    escaped.parent.mkdir()
    escaped.write_text("kind: [\n")
    cases.append(("ansi-file-name", "provisioner", ["simulate", "-f", str(root / "esc")], ["team\\x1b[2J\\x1b[31m.yaml"]))
    return cases
