"""A scripted fake of the advisor's API adapter (`provisioner.controller.kube.KubeApi`) and
object builders for the controller tests."""
from __future__ import annotations

import copy
from collections import defaultdict, deque

from provisioner.controller.kinds import EC2NODECLASS, NODE, NODEPOOL, Kind
from provisioner.controller.kube import ApiError, Gone


class FakeKube:
    """Objects per kind, served in pages; watch streams and failures are scripted per kind;
    Events and Nodes are stored like the API server would (409 on a duplicate name, 404 on a
    missing one), so dedup across a restart is checked against the server's state."""

    def __init__(self, page_size_cap: int | None = None):
        self.objects: dict[str, list[dict]] = defaultdict(list)
        self.resource_version = 1000
        self.streams: dict[str, deque] = defaultdict(deque)  # kind -> [list of events | Exception]
        self.list_failures: dict[str, deque] = defaultdict(deque)
        self.events: dict[tuple[str, str], dict] = {}
        self.event_writes: list[tuple[str, str]] = []  # ("create"|"patch", name)
        self.nodes: dict[str, dict] = {}
        self.node_patches: list[tuple[str, list]] = []
        self.calls: list[tuple] = []
        self.page_size_cap = page_size_cap
        self.fail_patch_once: set[str] = set()
        self.bindings: set[str] = set()  # ClusterRoleBinding names

    # -- list / watch ---------------------------------------------------------------------
    def list(self, kind: Kind, *, limit: int, continue_token: str | None) -> dict:
        self.calls.append(("list", kind.kind, continue_token))
        if self.list_failures[kind.kind]:
            raise self.list_failures[kind.kind].popleft()
        size = min(limit, self.page_size_cap or limit)
        start = int(continue_token or 0)
        items = self.objects[kind.kind][start:start + size]
        more = start + size < len(self.objects[kind.kind])
        meta = {"resourceVersion": str(self.resource_version)}
        if more:
            meta["continue"] = str(start + size)
        # List items carry no kind/apiVersion, as from the real API server.
        return {"items": [_as_list_item(o) for o in items], "metadata": meta}

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int):
        self.calls.append(("watch", kind.kind, resource_version))
        script = self.streams[kind.kind].popleft() if self.streams[kind.kind] else []
        if isinstance(script, Exception):
            raise script
        for event in script:
            if isinstance(event, Exception):
                raise event
            yield copy.deepcopy(event)

    # -- events ---------------------------------------------------------------------------
    def create_event(self, namespace: str, body: dict) -> dict:
        name = body["metadata"]["name"]
        self.event_writes.append(("create", name))
        if (namespace, name) in self.events:
            raise ApiError(409, f'events "{name}" already exists')
        self.events[(namespace, name)] = copy.deepcopy(body)
        return body

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict:
        self.event_writes.append(("patch", name))
        if (namespace, name) not in self.events:
            raise ApiError(404, f'events "{name}" not found')
        self.events[(namespace, name)].update(copy.deepcopy(patch))
        return self.events[(namespace, name)]

    # -- nodes (odigos-prepare-nodes) -----------------------------------------------------
    def list_nodes(self) -> list[dict]:
        self.calls.append(("list_nodes",))
        return [copy.deepcopy(n) for n in self.nodes.values()]

    def get_node(self, name: str) -> dict:
        if name not in self.nodes:
            raise ApiError(404, f'nodes "{name}" not found')
        return copy.deepcopy(self.nodes[name])

    def patch_node(self, name: str, operations: list) -> dict:
        self.node_patches.append((name, copy.deepcopy(operations)))
        node = self.nodes.get(name)
        if node is None:
            raise ApiError(404, f'nodes "{name}" not found')
        if name in self.fail_patch_once:
            self.fail_patch_once.discard(name)
            node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
        for op in operations:
            if op["op"] == "test" and op["path"] == "/metadata/resourceVersion" and node["metadata"]["resourceVersion"] != op["value"]:
                raise ApiError(422, "the test operation failed")
        for op in operations:
            if op["op"] == "add" and op["path"] == "/spec/taints":
                node.setdefault("spec", {})["taints"] = list(op["value"])
            elif op["op"] == "add" and op["path"] == "/spec/taints/-":
                node["spec"]["taints"].append(op["value"])
            elif op["op"] != "test":
                raise AssertionError(f"unexpected patch operation {op}")
        node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(node)


    def delete_cluster_role_binding(self, name: str) -> None:
        self.calls.append(("delete_clusterrolebinding", name))
        if name not in self.bindings:
            raise ApiError(404, f'clusterrolebindings.rbac.authorization.k8s.io "{name}" not found')
        self.bindings.discard(name)


def _as_list_item(obj):
    """List items carry no kind/apiVersion, as from the real API server (anything else as is)."""
    if not isinstance(obj, dict):
        return copy.deepcopy(obj)
    return {k: v for k, v in copy.deepcopy(obj).items() if k not in ("kind", "apiVersion")}


def gone() -> Gone:
    return Gone("too old resource version: 1000 (2000)")


# -- object builders ------------------------------------------------------------------------

def pod(name: str, *, namespace: str = "default", cpu: str = "1", memory: str = "1Gi", pending: bool = True,
        node: str | None = None, rv: str = "1", uid: str | None = None, **extra) -> dict:
    status: dict = {"phase": "Running" if node else "Pending"}
    if pending and not node:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": "0/3 nodes are available"}]
    spec: dict = {"containers": [{"name": "app", "image": "app:1",
                                  "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node:
        spec["nodeName"] = node
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}",
                        "resourceVersion": rv, "managedFields": [{"manager": "kubectl"}]},
           "spec": spec, "status": status}
    obj.update(extra)
    return obj


def node(name: str, *, cpu: str = "4", memory: str = "16Gi", rv: str = "1", labels: dict | None = None,
         taints: list | None = None) -> dict:
    spec: dict = {}
    if taints is not None:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-node-{name}", "resourceVersion": rv,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64",
                                    "kubernetes.io/os": "linux", **(labels or {})}},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def nodepool(name: str = "default", *, limits: dict | None = None, rv: str = "1") -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "uid": f"uid-np-{name}", "resourceVersion": rv},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}},
                "limits": limits or {"cpu": "1000"}}}


def nodeclass(name: str = "default", rv: str = "1") -> dict:
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name, "uid": f"uid-nc-{name}", "resourceVersion": rv},
            "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-test",
                     "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                     "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}]}}


def cluster(kube: FakeKube, *objects: dict) -> FakeKube:
    """Put objects where a list of their kind finds them."""
    for obj in objects:
        kube.objects[obj["kind"]].append(obj)
    return kube


def standard_objects() -> list[dict]:
    return [nodeclass(), nodepool(), node("node-a")]


SYNC_KINDS = (NODEPOOL, EC2NODECLASS, NODE)


# -- the same fake behind real HTTP, for the adapter on the official client -------------------

import json  # noqa: E402
import re  # noqa: E402
from urllib.parse import parse_qs, urlparse  # noqa: E402

from provisioner.controller.kinds import WATCHED  # noqa: E402
from tests.fake_http import JsonHandler, LocalServer  # noqa: E402

_PATHS = {
    "/api/v1/pods": "Pod", "/api/v1/nodes": "Node", "/apis/apps/v1/daemonsets": "DaemonSet",
    "/apis/karpenter.sh/v1/nodepools": "NodePool", "/apis/karpenter.sh/v1/nodeclaims": "NodeClaim",
    "/apis/karpenter.sh/v1alpha1/nodeoverlays": "NodeOverlay",
    "/apis/karpenter.k8s.aws/v1/ec2nodeclasses": "EC2NodeClass",
    "/apis/policy/v1/poddisruptionbudgets": "PodDisruptionBudget",
    "/api/v1/persistentvolumeclaims": "PersistentVolumeClaim", "/api/v1/persistentvolumes": "PersistentVolume",
    "/apis/storage.k8s.io/v1/storageclasses": "StorageClass", "/apis/storage.k8s.io/v1/csinodes": "CSINode",
}
_KINDS = {k.kind: k for k in WATCHED}
_EVENT = re.compile(r"^/api/v1/namespaces/([^/]+)/events(?:/([^/]+))?$")
_NODE = re.compile(r"^/api/v1/nodes/([^/]+)$")


class FakeApiServer(LocalServer):
    """`FakeKube` served over HTTP on 127.0.0.1 (a free port), speaking the API server's paths,
    status codes and watch stream format. Records each request's method, path and content type."""

    def __init__(self, kube: FakeKube):
        self.kube = kube
        self.requests: list[tuple[str, str, str | None]] = []
        fake = self

        class Handler(JsonHandler):
            def _status(self, exc: ApiError) -> None:
                self._reply(exc.status, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                         "message": str(exc).split(": ", 1)[-1], "code": exc.status})

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _record(self):
                fake.requests.append((self.command, self.path, self.headers.get("Content-Type")))

            def do_GET(self):  # noqa: N802
                self._record()
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path in _PATHS:
                    kind = _KINDS[_PATHS[url.path]]
                    if query.get("watch") == "true":
                        return self._watch(kind, query)
                    try:
                        page = fake.kube.list(kind, limit=int(query.get("limit", 500)), continue_token=query.get("continue"))
                    except ApiError as exc:
                        return self._status(exc)
                    return self._reply(200, {"kind": f"{kind.kind}List", "apiVersion": kind.api_version, **page})
                match = _NODE.match(url.path)
                if match:
                    try:
                        return self._reply(200, fake.kube.get_node(match.group(1)))
                    except ApiError as exc:
                        return self._status(exc)
                return self._status(ApiError(404, "not found"))

            def _watch(self, kind, query):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                try:
                    for event in fake.kube.watch(kind, resource_version=query.get("resourceVersion", ""),
                                                 timeout_seconds=int(query.get("timeoutSeconds", 0))):
                        self.wfile.write((json.dumps(event) + "\n").encode())
                except ApiError as exc:  # the API server reports an expired version inside the stream
                    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": exc.status,
                              "reason": "Expired" if exc.status == 410 else "InternalError", "message": str(exc)}
                    self.wfile.write((json.dumps({"type": "ERROR", "object": status}) + "\n").encode())

            def do_POST(self):  # noqa: N802
                self._record()
                match = _EVENT.match(urlparse(self.path).path)
                if not match:
                    return self._status(ApiError(404, "not found"))
                try:
                    return self._reply(201, fake.kube.create_event(match.group(1), self._body()))
                except ApiError as exc:
                    return self._status(exc)

            def do_PATCH(self):  # noqa: N802
                self._record()
                path = urlparse(self.path).path
                try:
                    if (match := _EVENT.match(path)) and match.group(2):
                        return self._reply(200, fake.kube.patch_event(match.group(1), match.group(2), self._body()))
                    if match := _NODE.match(path):
                        return self._reply(200, fake.kube.patch_node(match.group(1), self._body()))
                except ApiError as exc:
                    return self._status(exc)
                return self._status(ApiError(404, "not found"))

        super().__init__(Handler)

    def api(self):
        """The real adapter, on the official client, pointed at this server."""
        from kubernetes import client

        from provisioner.controller.kube import KubernetesApi

        configuration = client.Configuration(host=self.url)
        configuration.retries = 0  # fail fast: the tests assert on errors, not on urllib3's retries
        return KubernetesApi(client.ApiClient(configuration), request_timeout=10.0)
