"""`provisioner odigos-prepare-nodes`: taint the nodes odiglet has not prepared yet.

With Odigos' host-path and CSI mount methods a pod must not start on a node before odiglet
prepared it. New Karpenter nodes get the startup taint `odigos.io/needs-init:NoSchedule` from
their NodePool; nodes that existed before Odigos was installed do not, and this one-shot
command gives it to them. Odiglet's init removes that exact taint (key and NoSchedule) and
labels the node `odigos.io/odiglet-oss-installed=true` (community) or
`odigos.io/odiglet-enterprise-installed=true` (onprem), so a node carrying either label is
already prepared and is left alone: tainting it would keep pods off it until odiglet restarts.

Idempotent: a second run finds every node tainted or prepared and changes nothing.
`--release-binding NAME` deletes that ClusterRoleBinding once every node is tainted or skipped
(none failed): the Job's right to patch every Node ends with the Job.
`--selector` narrows the nodes considered (as `kubectl taint --selector`); `--taint` names the
taint (default `odigos.io/needs-init=:NoSchedule`).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass

from ..cli import add_command

TAINT_KEY = "odigos.io/needs-init"
TAINT = {"key": TAINT_KEY, "effect": "NoSchedule"}
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TERM = re.compile(r"^(?P<neg>!)?(?P<key>[A-Za-z0-9./_-]+)(?:(?P<op>==|=|!=)(?P<value>[A-Za-z0-9._-]*))?$")
PREPARED_LABELS = ("odigos.io/odiglet-oss-installed", "odigos.io/odiglet-enterprise-installed")
FARGATE_LABEL = ("eks.amazonaws.com/compute-type", "fargate")
CONFLICT_STATUSES = (409, 422)  # a write in between: the JSON patch `test` on resourceVersion failed
ATTEMPTS = 3


@dataclass(frozen=True)
class Outcome:
    node: str
    action: str  # tainted | would-taint | skipped | failed
    reason: str


def parse_taint(text: str) -> dict:
    """`key=value:Effect`, `key=:Effect` or `key:Effect` (kubectl's syntax) as a taint object."""
    spec, _, effect = text.rpartition(":")
    key, _, value = spec.partition("=")
    if not key or effect not in EFFECTS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a taint (key=[value]:{'|'.join(EFFECTS)})")
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def parse_selector(text: str) -> list[tuple[str, str, str | None]]:
    """A label selector of equality terms (`k=v`, `k==v`, `k!=v`, `k`, `!k`), as `kubectl
    --selector` takes them, into (key, operator, value) with operator in = != exists !exists."""
    terms = []
    for raw in (t.strip() for t in text.split(",") if t.strip()):
        match = _TERM.match(raw)
        if not match or (match["neg"] and match["op"]):
            raise argparse.ArgumentTypeError(f"{raw!r} is not a label selector term (k=v, k!=v, k or !k)")
        if match["op"]:
            terms.append((match["key"], "!=" if match["op"] == "!=" else "=", match["value"]))
        else:
            terms.append((match["key"], "!exists" if match["neg"] else "exists", None))
    return terms


def selected(labels: dict, terms: list[tuple[str, str, str | None]]) -> bool:
    for key, op, value in terms:
        present = key in labels
        if (op == "=" and labels.get(key) != value) or (op == "!=" and present and labels[key] == value) \
                or (op == "exists" and not present) or (op == "!exists" and present):
            return False
    return True


def decide(node: dict, prepared_labels: tuple[str, ...] = PREPARED_LABELS, taint: dict = TAINT,
           selector: list | None = None) -> tuple[bool, str]:
    """(taint it?, why): pure, from the Node object alone."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if selector and not selected(labels, selector):
        return False, "not selected by --selector"
    if meta.get("deletionTimestamp"):
        return False, "being deleted"
    for label in prepared_labels:
        if labels.get(label) == "true":
            return False, f"already prepared by odiglet ({label}=true)"
    if labels.get(FARGATE_LABEL[0]) == FARGATE_LABEL[1]:
        return False, "Fargate node: odiglet (a DaemonSet) never runs there, so nothing would remove the taint"
    for existing in (node.get("spec") or {}).get("taints") or []:
        if isinstance(existing, dict) and existing.get("key") == taint["key"]:
            if existing.get("effect") == taint["effect"]:
                return False, f"already tainted {taint['key']}:{taint['effect']}"
            return False, (f"carries {taint['key']}:{existing.get('effect')}, which odiglet does not remove; "
                           "left as it is")
    return True, "odiglet has not prepared it yet"


def taint_patch(node: dict, taint: dict = TAINT) -> list[dict]:
    """A JSON patch adding the taint, guarded by the node's resourceVersion so a concurrent
    change (odiglet labelling it, another taint) makes it fail instead of being overwritten."""
    meta = node.get("metadata") or {}
    has_taints = isinstance((node.get("spec") or {}).get("taints"), list)
    add = ({"op": "add", "path": "/spec/taints/-", "value": dict(taint)} if has_taints
           else {"op": "add", "path": "/spec/taints", "value": [dict(taint)]})
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")}, add]


def prepare_nodes(api, *, dry_run: bool, prepared_labels: tuple[str, ...] = PREPARED_LABELS, taint: dict = TAINT,
                  selector: list | None = None) -> list[Outcome]:
    """Decide for every node, then taint (unless dry_run). `api` is a controller.kube.KubeApi."""
    from ..controller.kube import ApiError

    outcomes = []
    for node in sorted(api.list_nodes(), key=lambda n: (n.get("metadata") or {}).get("name") or ""):
        name = (node.get("metadata") or {}).get("name") or "?"
        wanted, why = decide(node, prepared_labels, taint, selector)
        if not wanted:
            outcomes.append(Outcome(name, "skipped", why))
            continue
        if dry_run:
            outcomes.append(Outcome(name, "would-taint", why))
            continue
        for attempt in range(ATTEMPTS):
            try:
                api.patch_node(name, taint_patch(node, taint))
                outcomes.append(Outcome(name, "tainted", why))
                break
            except ApiError as exc:
                if exc.status not in CONFLICT_STATUSES or attempt == ATTEMPTS - 1:
                    outcomes.append(Outcome(name, "failed", str(exc)))
                    break
                try:
                    node = api.get_node(name)  # changed under us: decide again on the fresh object
                except ApiError as again:
                    outcomes.append(Outcome(name, "failed" if again.status != 404 else "skipped",
                                            "deleted meanwhile" if again.status == 404 else str(again)))
                    break
                wanted, why = decide(node, prepared_labels, taint, selector)
                if not wanted:
                    outcomes.append(Outcome(name, "skipped", why))
                    break
    return outcomes


def render_report(outcomes: list[Outcome], dry_run: bool) -> str:
    width = max([len(o.node) for o in outcomes] + [4])
    lines = [f"{'NODE':<{width}}  {'ACTION':<11}  REASON"]
    lines += [f"{o.node:<{width}}  {o.action:<11}  {o.reason}" for o in outcomes]
    counts = {a: sum(o.action == a for o in outcomes) for a in ("tainted", "would-taint", "skipped", "failed")}
    summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n) or "no nodes"
    lines.append(f"{len(outcomes)} nodes: {summary}{' (dry run: nothing changed)' if dry_run else ''}")
    return "\n".join(lines) + "\n"


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "odigos-prepare-nodes", run,
        description=__doc__.split("\n\n")[1].replace("\n", " "))
    parser.add_argument("--dry-run", action="store_true", help="Report what would be tainted, change nothing.")
    parser.add_argument("--taint", type=parse_taint, default=dict(TAINT), metavar="KEY=[VALUE]:EFFECT",
                        help=f"The taint to add (default {TAINT_KEY}=:NoSchedule).")
    parser.add_argument("--selector", type=parse_selector, default=None, metavar="SELECTOR",
                        help="Only nodes matching this label selector (k=v, k!=v, k, !k; comma-separated).")
    parser.add_argument("--prepared-label", action="append", dest="prepared_labels", metavar="KEY",
                        help=f"Label odiglet sets to 'true' on prepared nodes (repeatable; default: {', '.join(PREPARED_LABELS)}).")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="Report format.")
    parser.add_argument("--release-binding", metavar="NAME",
                        help="Delete this ClusterRoleBinding (the one granting this run patch on nodes) once no "
                             "write failed, so the right ends with the run.")


def run(args: argparse.Namespace, api=None) -> int:
    """0 when every node is tainted, prepared or skipped for a stated reason (and the binding, if
    named, is released); 1 if any write failed;
    2 when there is no cluster to talk to (no kubeconfig)."""
    from ..controller.kube import ApiError, KubernetesApi, NoKubeconfig

    if api is None:
        try:
            api = KubernetesApi.from_environment()
        except NoKubeconfig as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    labels = tuple(args.prepared_labels or PREPARED_LABELS)
    try:
        outcomes = prepare_nodes(api, dry_run=args.dry_run, prepared_labels=labels, taint=args.taint,
                                 selector=args.selector)
    except ApiError as exc:  # listing nodes failed: nothing was changed
        print(f"error: cannot list nodes: {exc}", file=sys.stderr)
        return 1
    failed = any(o.action == "failed" for o in outcomes)
    released = None
    binding = getattr(args, "release_binding", None)
    if binding and not failed and not args.dry_run:
        try:
            api.delete_cluster_role_binding(binding)
            released = True
        except ApiError as exc:
            if exc.status != 404:  # already gone (a retried pod released it): nothing left to do
                print(f"error: cannot delete ClusterRoleBinding {binding}: {exc}", file=sys.stderr)
                failed = True
            released = exc.status == 404
    if args.output == "json":
        json.dump({"dryRun": args.dry_run, "nodes": [asdict(o) for o in outcomes],
                   **({"releasedBinding": binding if released else None} if binding else {})}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_report(outcomes, args.dry_run))
        if released:
            sys.stdout.write(f"released ClusterRoleBinding {binding}\n")
    return 1 if failed else 0
