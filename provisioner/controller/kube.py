"""The thin adapter between the advisor and the API server: plain dicts in and out.

Everything else in the controller talks to `KubeApi`; tests hand it a fake. `KubernetesApi`
is the real one, on the official `kubernetes` client, asking for raw JSON (no model
deserialisation) so that the scheduling core sees objects exactly as the API returned them.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator, Protocol

from .kinds import CSINODE, DAEMONSET, NODE, PDB, POD, PV, PVC, STORAGECLASS, Kind


# The built-in kinds' list calls (across all namespaces): (KubernetesApi's client, its method).
# Custom resources go through CustomObjectsApi.
_BUILTIN_LISTS = {
    POD: ("core", "list_pod_for_all_namespaces"), NODE: ("core", "list_node"),
    DAEMONSET: ("apps", "list_daemon_set_for_all_namespaces"),
    PDB: ("policy", "list_pod_disruption_budget_for_all_namespaces"),
    PVC: ("core", "list_persistent_volume_claim_for_all_namespaces"), PV: ("core", "list_persistent_volume"),
    STORAGECLASS: ("storage", "list_storage_class"), CSINODE: ("storage", "list_csi_node"),
}


class ApiError(Exception):
    """A failed API call; `status` is the HTTP status, 0 when no response came back."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"{status}: {message}" if status else message)


class Gone(ApiError):
    """410: the resourceVersion (or continue token) is too old; list again from scratch."""

    def __init__(self, message: str = "resource version too old"):
        super().__init__(410, message)


# Named outside the classes: in their bodies `list` is their own list() method, not the builtin.
_Objects = list[dict]  # objects as read
_JsonPatch = list[dict]  # RFC 6902 operations


class KubeApi(Protocol):
    def list(self, kind: Kind, *, limit: int, continue_token: str | None) -> dict:
        """One page of a list: `{"items": [...], "metadata": {"resourceVersion", "continue"}}`."""

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int) -> Iterator[dict]:
        """Watch events `{"type", "object"}` (BOOKMARK included) until the server ends the
        stream; raises Gone for 410, ApiError otherwise."""

    def create_event(self, namespace: str, body: dict) -> dict: ...

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict: ...

    def list_nodes(self) -> _Objects: ...

    def get_node(self, name: str) -> dict: ...

    def patch_node(self, name: str, operations: _JsonPatch) -> dict:
        """A JSON patch (RFC 6902), so a `test` operation can guard against concurrent writers."""

    def delete_cluster_role_binding(self, name: str) -> None: ...


def _error(exc: Exception) -> ApiError:
    """The adapter's error for whatever the client or urllib3 raised."""
    status = getattr(exc, "status", None)
    if isinstance(status, int) and status:
        message = getattr(exc, "reason", None) or str(exc)
        body = getattr(exc, "body", None)
        if body:
            try:
                message = json.loads(body).get("message") or message
            except (ValueError, AttributeError):
                pass
        return Gone(str(message)) if status == 410 else ApiError(status, str(message))
    return ApiError(0, f"{type(exc).__name__}: {exc}")


class KubernetesApi:
    """`KubeApi` over the official client (in-cluster config or a kubeconfig)."""

    def __init__(self, api_client: Any = None, *, request_timeout: float = 30.0):
        from kubernetes import client  # imported here so the simulator never needs it

        self._client = client
        self._api_client = api_client or client.ApiClient()
        self.core = client.CoreV1Api(self._api_client)
        self.apps = client.AppsV1Api(self._api_client)
        self.policy = client.PolicyV1Api(self._api_client)
        self.storage = client.StorageV1Api(self._api_client)
        self.custom = client.CustomObjectsApi(self._api_client)
        self.request_timeout = request_timeout

    @classmethod
    def from_environment(cls, kubeconfig: str | None = None, context: str | None = None) -> "KubernetesApi":
        """In a pod: the service account; elsewhere: the kubeconfig (`kubeconfig`, else $KUBECONFIG,
        else ~/.kube/config) and its `context` (default: the current one). NoKubeconfig when none."""
        return cls(api_client_from_environment(kubeconfig, context))


    def _lister(self, kind: Kind):
        if kind in _BUILTIN_LISTS:
            api, method = _BUILTIN_LISTS[kind]
            return getattr(getattr(self, api), method), {}
        return self.custom.list_cluster_custom_object, {"group": kind.group, "version": kind.version, "plural": kind.plural}

    def _call(self, func, **kwargs) -> Any:
        try:
            response = func(_preload_content=False, **kwargs)
            return json.loads(response.data) if hasattr(response, "data") else response
        except ApiError:
            raise
        except Exception as exc:  # noqa: BLE001 - every client/urllib3 failure becomes an ApiError
            raise _error(exc) from exc

    def list(self, kind: Kind, *, limit: int, continue_token: str | None) -> dict:
        func, args = self._lister(kind)
        if continue_token:
            args = {**args, "_continue": continue_token}
        return self._call(func, limit=limit, _request_timeout=self.request_timeout, **args)

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int) -> Iterator[dict]:
        from kubernetes.watch.watch import iter_resp_lines

        func, args = self._lister(kind)
        try:
            # The read timeout outlives the server-side timeout so the server ends the stream.
            response = func(watch=True, resource_version=resource_version, timeout_seconds=timeout_seconds,
                            allow_watch_bookmarks=True, _preload_content=False,
                            _request_timeout=(self.request_timeout, timeout_seconds + 30), **args)
        except Exception as exc:  # noqa: BLE001
            raise _error(exc) from exc
        try:
            for line in iter_resp_lines(response):
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    code = int(status.get("code") or 0)
                    message = str(status.get("message") or status.get("reason") or "watch error")
                    raise Gone(message) if code == 410 else ApiError(code, message)
                yield event
        except ApiError:
            raise
        except Exception as exc:  # noqa: BLE001 - a dropped connection mid-stream
            raise _error(exc) from exc
        finally:
            response.close()
            response.release_conn()

    def create_event(self, namespace: str, body: dict) -> dict:
        return self._call(self.core.create_namespaced_event, namespace=namespace, body=body,
                          _request_timeout=self.request_timeout)

    def patch_event(self, namespace: str, name: str, patch: dict) -> dict:
        return self._call(self.core.patch_namespaced_event, name=name, namespace=namespace, body=patch,
                          _content_type="application/merge-patch+json", _request_timeout=self.request_timeout)

    def list_nodes(self) -> _Objects:
        nodes: list[dict] = []
        token: str | None = None
        while True:
            page = self.list(NODE, limit=500, continue_token=token)
            nodes.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return nodes

    def get_node(self, name: str) -> dict:
        return self._call(self.core.read_node, name=name, _request_timeout=self.request_timeout)

    def delete_cluster_role_binding(self, name: str) -> None:
        from kubernetes import client

        self._call(client.RbacAuthorizationV1Api(self._api_client).delete_cluster_role_binding, name=name,
                   _request_timeout=self.request_timeout)

    def patch_node(self, name: str, operations: _JsonPatch) -> dict:
        return self._call(self.core.patch_node, name=name, body=operations,
                          _content_type="application/json-patch+json", _request_timeout=self.request_timeout)


HOW_TO_GET_ONE = "`aws eks update-kubeconfig --name <cluster> --region <region>` writes one"


class NoKubeconfig(Exception):
    """No cluster to talk to: one line for the user (where we looked, how to get one), exit 2."""


def kubeconfig_paths(kubeconfig: str | None = None) -> list[str]:
    """Where a kubeconfig is looked for, as the client does: the given file, else every file of
    $KUBECONFIG (a path list), else ~/.kube/config."""
    if kubeconfig:
        return [kubeconfig]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [os.path.expanduser("~/.kube/config")]


def api_client_from_environment(kubeconfig: str | None = None, context: str | None = None):
    """A configured `kubernetes.client.ApiClient`, or NoKubeconfig naming where it looked.

    In a pod (KUBERNETES_SERVICE_HOST set, no kubeconfig named) the service account; otherwise
    the kubeconfig. A file that exists but cannot be used (malformed, unknown context) is named
    with the client's reason, still on one line."""
    from kubernetes import client, config

    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        except config.ConfigException as exc:
            in_cluster_error = f"in-cluster service account unusable ({exc})"
    else:
        in_cluster_error = "not in a pod (KUBERNETES_SERVICE_HOST unset)"
    paths = kubeconfig_paths(kubeconfig)
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        where = ", ".join(paths) + (" ($KUBECONFIG)" if kubeconfig is None and os.environ.get("KUBECONFIG") else "")
        raise NoKubeconfig(f"no kubeconfig found: {in_cluster_error}, and no file at {where}; {HOW_TO_GET_ONE}, "
                           f"or pass --kubeconfig PATH / set KUBECONFIG")
    try:
        configuration = client.Configuration()
        config.load_kube_config(config_file=os.pathsep.join(found) if len(found) > 1 else found[0],
                                context=context, client_configuration=configuration)
        return client.ApiClient(configuration)
    except Exception as exc:  # noqa: BLE001 - ConfigException, a YAML error, a missing key: all one line
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise NoKubeconfig(f"kubeconfig {', '.join(found)} cannot be used: {reason}; {HOW_TO_GET_ONE}") from None
