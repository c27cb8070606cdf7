"""`python -m offline.preflight STACK --to VERSION [--kubeconfig PATH] [--context NAME] [-o json|table]`:
read-only checks of the live cluster before `pulumi up` moves it to Karpenter VERSION.

It reads (GET only) the Karpenter CRDs, the karpenter helm release (its release secret, else the
controller Deployment's labels) and every NodePool, NodeClaim, EC2NodeClass and NodeOverlay, and
reports what would break the upgrade (upstream upgrade guide and troubleshooting guide;
aws/karpenter-provider-aws#8320, #7734, kubernetes-sigs/karpenter#2157):
- a CRD whose `status.storedVersions` names a version the target does not serve (the CRD update
  is refused until objects are migrated and storedVersions patched);
- a CRD helm's karpenter-crd release does not own (helm refuses it: "invalid ownership metadata");
- objects using fields the target's schema does not have (the API server would prune them).
It warns when the installed chart is not the stack's pinned version. Exit 0 clean, 1 problems
found, 2 bad input or the API server unreachable (one line).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from typing import Any, Protocol

from components import crds as crd_checks
from components import reference
from components.platform import load_platform
from components.versions import expanded_violations
from provisioner import NoKubeconfig, api_client_from_environment

from . import versioncli
from kubefacts.errors import Refusal

CRD_RELEASE = "karpenter-crd"
CONTROLLER_RELEASE = "karpenter"
# The objects whose fields the target's schema must still have.
CHECKED_KINDS = ("karpenter.sh_nodepools", "karpenter.sh_nodeclaims", "karpenter.k8s.aws_ec2nodeclasses",
                 "karpenter.sh_nodeoverlays")


class PreflightError(Refusal):
    """The API server could not be read (connection, auth, an unexpected status)."""


class ClusterReader(Protocol):
    def crd(self, name: str) -> dict[str, Any] | None: ...
    def helm_release_secrets(self, namespace: str, release: str) -> list[dict[str, Any]]: ...
    def deployments(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...
    def objects(self, group: str, version: str, plural: str) -> list[dict[str, Any]] | None: ...


def decode_helm_release(secret: dict[str, Any]) -> dict[str, Any]:
    """A helm 3 release secret's payload: base64 (the Secret) of base64 of gzip of JSON."""
    data = base64.b64decode(secret["data"]["release"])
    data = base64.b64decode(data)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def installed_chart(reader: ClusterReader, namespace: str) -> tuple[str | None, str]:
    """(chart version, where it was read) of the karpenter release: the newest deployed helm
    release secret, else the controller Deployment's `helm.sh/chart` / version label."""
    secrets = reader.helm_release_secrets(namespace, CONTROLLER_RELEASE)
    deployed = [s for s in secrets if (s.get("metadata", {}).get("labels") or {}).get("status") == "deployed"]
    if deployed:
        newest = max(deployed, key=lambda s: int((s["metadata"].get("labels") or {}).get("version", "0")))
        try:
            release = decode_helm_release(newest)
            return str(release["chart"]["metadata"]["version"]), f"helm release secret {newest['metadata']['name']}"
        except (KeyError, ValueError, TypeError, OSError):
            pass
    for deployment in reader.deployments(namespace, "app.kubernetes.io/name=karpenter"):
        labels = deployment.get("metadata", {}).get("labels") or {}
        chart = labels.get("helm.sh/chart", "")
        if chart.startswith("karpenter-"):
            return chart.removeprefix("karpenter-"), f"deployment {deployment['metadata']['name']} label helm.sh/chart"
        if labels.get("app.kubernetes.io/version"):
            return labels["app.kubernetes.io/version"], f"deployment {deployment['metadata']['name']} label app.kubernetes.io/version"
    return None, "not found (no deployed helm release secret, no controller deployment)"


def check(reader: ClusterReader, *, stack: str, frm: str, to: str, namespace: str) -> dict[str, Any]:
    """The pre-flight report (pure over the reader)."""
    target = reference.release(to)
    problems: list[str] = []
    warnings: list[str] = []
    chart, source = installed_chart(reader, namespace)
    if chart is None:
        warnings.append(f"karpenter chart: {source}; is Karpenter installed in namespace {namespace}?")
    elif chart != frm:
        warnings.append(f"the cluster runs chart {chart} ({source}) but stack {stack} pins {frm}: the plan "
                        f"(python -m offline.upgrade {stack} --to {to}) assumes {frm}")
    crd_report = []
    served_by_stem: dict[str, str] = {}
    for stem, crd in sorted(target.crds.items()):
        name = f"{crd['plural']}.{crd['group']}"
        served = [v["name"] for v in crd["versions"]]
        served_by_stem[stem] = served[-1]
        live = reader.crd(name)
        if live is None:
            crd_report.append({"name": name, "storedVersions": [], "served": served, "status": "absent"})
            warnings.append(f"CRD {name} is not installed; the karpenter-crd chart {to} creates it")
            continue
        stored = list((live.get("status") or {}).get("storedVersions") or [])
        stale = [v for v in stored if v not in served]
        status = "ok"
        if stale:
            status = "storedVersions"
            problems.append(f"CRD {name}: status.storedVersions {stored} names {', '.join(stale)}, which Karpenter {to} "
                            f"does not serve ({', '.join(served)}): migrate every object to a served version and patch "
                            "status.storedVersions before the CRD upgrade, or the API server refuses it")
        annotations = (live.get("metadata") or {}).get("annotations") or {}
        owner = annotations.get("meta.helm.sh/release-name")
        if owner != CRD_RELEASE:
            status = "ownership" if status == "ok" else status
            problems.append(f"CRD {name}: owned by helm release {owner!r}, not {CRD_RELEASE!r}: helm refuses to take it "
                            "over (invalid ownership metadata); set meta.helm.sh/release-name/-namespace and the "
                            "app.kubernetes.io/managed-by=Helm label, as the upstream troubleshooting guide says")
        crd_report.append({"name": name, "storedVersions": stored, "served": served, "status": status})
    validator = crd_checks.validator_for(to)
    resources = []
    for stem in CHECKED_KINDS:
        if stem not in target.crds:
            continue
        crd = target.crds[stem]
        version = served_by_stem[stem]
        for obj in reader.objects(crd["group"], version, crd["plural"]) or []:
            manifest = {**obj, "apiVersion": f"{crd['group']}/{version}", "kind": crd["kind"]}
            for path, message in expanded_violations(validator.validate(manifest)).items():
                if message == "unknown field":
                    object_name = (obj.get("metadata") or {}).get("name")
                    resources.append({"kind": crd["kind"], "name": object_name, "path": path})
                    problems.append(f"{crd['kind']}/{object_name}: {path} is not a field of Karpenter {to}'s {crd['kind']} "
                                    "(the API server would drop it)")
    return {"stack": stack, "from": frm, "to": to, "namespace": namespace,
            "installed": {"chart": chart, "source": source}, "crds": crd_report, "resources": resources,
            "problems": problems, "warnings": warnings}


class KubernetesReader:
    """`ClusterReader` over the official client; GET requests only."""

    def __init__(self, api_client: Any, timeout: float = 20.0):
        from kubernetes import client

        self.ext = client.ApiextensionsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.timeout = timeout

    def _get(self, func: Any, *, missing_ok: bool = False, **kwargs: Any) -> Any:
        try:
            response = func(_preload_content=False, _request_timeout=self.timeout, **kwargs)
            return json.loads(response.data)
        except Exception as exc:  # noqa: BLE001 - every client/urllib3 failure becomes one message
            status = getattr(exc, "status", None)
            if missing_ok and status == 404:
                return None
            if status:
                raise PreflightError(f"API server answered {status} {getattr(exc, 'reason', '')}".strip()) from exc
            raise PreflightError(f"cannot reach the API server: {type(exc).__name__}: {exc}") from exc

    def crd(self, name: str) -> dict[str, Any] | None:
        return self._get(self.ext.read_custom_resource_definition, name=name, missing_ok=True)

    def helm_release_secrets(self, namespace: str, release: str) -> list[dict[str, Any]]:
        found = self._get(self.core.list_namespaced_secret, namespace=namespace,
                          label_selector=f"owner=helm,name={release}", missing_ok=True)
        return (found or {}).get("items") or []

    def deployments(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        found = self._get(self.apps.list_namespaced_deployment, namespace=namespace, label_selector=selector, missing_ok=True)
        return (found or {}).get("items") or []

    def objects(self, group: str, version: str, plural: str) -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = []
        token = None
        while True:
            args: dict[str, str] = {"_continue": token} if token else {}
            page = self._get(self.custom.list_cluster_custom_object, group=group, version=version, plural=plural,
                             limit=500, missing_ok=True, **args)
            if page is None:
                return None
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items


def table(report: dict[str, Any]) -> str:
    lines = [f"Pre-flight for stack {report['stack']}: Karpenter {report['from']} -> {report['to']}",
             f"Installed karpenter chart: {report['installed']['chart'] or 'unknown'} ({report['installed']['source']})",
             "CRDs:"]
    lines += [f"  {c['name']}: storedVersions {c['storedVersions'] or '-'}, target serves {c['served']}: {c['status']}"
              for c in report["crds"]]
    lines.append(f"Problems ({len(report['problems'])}):")
    lines += [f"  {p}" for p in report["problems"]] or ["  none"]
    lines.append(f"Warnings ({len(report['warnings'])}):")
    lines += [f"  {w}" for w in report["warnings"]] or ["  none"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = versioncli.parser("python -m offline.preflight", " ".join(__doc__.split("\n\n")[0].split()), cluster=True)
    args = parser.parse_args(argv)
    try:
        reference.check(args.to)
        platform = load_platform(args.project_dir.resolve(), args.stack)
    except versioncli.INPUT_ERRORS as err:
        return versioncli.refuse(err, args.stack)
    try:
        api_client = api_client_from_environment(args.kubeconfig, args.context)
    except NoKubeconfig as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        api_client.configuration.retries = 0
        karpenter = platform.settings.karpenter
        report = check(KubernetesReader(api_client), stack=args.stack, frm=karpenter.version, to=args.to,
                       namespace=karpenter.namespace)
    except PreflightError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a missing or malformed kubeconfig
        if type(err).__module__.startswith("kubernetes"):
            print(f"error: kubeconfig: {err}", file=sys.stderr)
            return 2
        raise
    print(json.dumps(report, indent=2) if args.output == "json" else table(report))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
