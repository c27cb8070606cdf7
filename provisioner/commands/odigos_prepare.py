"""`provisioner odigos-prepare-nodes`: taint the nodes odiglet has not prepared yet.

With Odigos' host-path and CSI mount methods a pod must not start on a node before odiglet
prepared it. New Karpenter nodes get the startup taint `odigos.io/needs-init:NoSchedule` from
their NodePool; nodes that existed before Odigos was installed do not, and this one-shot
command gives it to them. Odiglet's init removes that exact taint (key and NoSchedule) and
labels the node `odigos.io/odiglet-oss-installed=true` (community) or
`odigos.io/odiglet-enterprise-installed=true` (onprem), so a node carrying either label is
already prepared and is left alone: tainting it would keep pods off it until odiglet restarts.

Idempotent: a second run finds every node tainted or prepared and changes nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass

TAINT_KEY = "odigos.io/needs-init"
TAINT = {"key": TAINT_KEY, "effect": "NoSchedule"}
PREPARED_LABELS = ("odigos.io/odiglet-oss-installed", "odigos.io/odiglet-enterprise-installed")
FARGATE_LABEL = ("eks.amazonaws.com/compute-type", "fargate")
CONFLICT_STATUSES = (409, 422)  # a write in between: the JSON patch `test` on resourceVersion failed
ATTEMPTS = 3


@dataclass(frozen=True)
class Outcome:
    node: str
    action: str  # tainted | would-taint | skipped | failed
    reason: str


def decide(node: dict, prepared_labels: tuple[str, ...] = PREPARED_LABELS) -> tuple[bool, str]:
    """(taint it?, why): pure, from the Node object alone."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if meta.get("deletionTimestamp"):
        return False, "being deleted"
    for label in prepared_labels:
        if labels.get(label) == "true":
            return False, f"already prepared by odiglet ({label}=true)"
    if labels.get(FARGATE_LABEL[0]) == FARGATE_LABEL[1]:
        return False, "Fargate node: odiglet (a DaemonSet) never runs there, so nothing would remove the taint"
    taints = (node.get("spec") or {}).get("taints") or []
    for taint in taints:
        if isinstance(taint, dict) and taint.get("key") == TAINT_KEY:
            if taint.get("effect") == "NoSchedule":
                return False, f"already tainted {TAINT_KEY}:NoSchedule"
            return False, (f"carries {TAINT_KEY}:{taint.get('effect')}, which odiglet does not remove; "
                           "left as it is")
    return True, "odiglet has not prepared it yet"


def taint_patch(node: dict) -> list[dict]:
    """A JSON patch adding the taint, guarded by the node's resourceVersion so a concurrent
    change (odiglet labelling it, another taint) makes it fail instead of being overwritten."""
    meta = node.get("metadata") or {}
    has_taints = isinstance((node.get("spec") or {}).get("taints"), list)
    add = ({"op": "add", "path": "/spec/taints/-", "value": dict(TAINT)} if has_taints
           else {"op": "add", "path": "/spec/taints", "value": [dict(TAINT)]})
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")}, add]


def prepare_nodes(api, *, dry_run: bool, prepared_labels: tuple[str, ...] = PREPARED_LABELS) -> list[Outcome]:
    """Decide for every node, then taint (unless dry_run). `api` is a controller.kube.KubeApi."""
    from ..controller.kube import ApiError

    outcomes = []
    for node in sorted(api.list_nodes(), key=lambda n: (n.get("metadata") or {}).get("name") or ""):
        name = (node.get("metadata") or {}).get("name") or "?"
        taint, why = decide(node, prepared_labels)
        if not taint:
            outcomes.append(Outcome(name, "skipped", why))
            continue
        if dry_run:
            outcomes.append(Outcome(name, "would-taint", why))
            continue
        for attempt in range(ATTEMPTS):
            try:
                api.patch_node(name, taint_patch(node))
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
                taint, why = decide(node, prepared_labels)
                if not taint:
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
    parser = subparsers.add_parser(
        "odigos-prepare-nodes", help=f"taint existing nodes odiglet has not prepared yet with {TAINT_KEY}:NoSchedule",
        description=__doc__.split("\n\n")[1].replace("\n", " "))
    parser.add_argument("--dry-run", action="store_true", help="report what would be tainted, change nothing")
    parser.add_argument("--prepared-label", action="append", dest="prepared_labels", metavar="KEY",
                        help=f"label odiglet sets to 'true' on prepared nodes (repeatable; default: {', '.join(PREPARED_LABELS)})")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="report format")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, api=None) -> int:
    """0 when every node is tainted, prepared or skipped for a stated reason; 1 if any write failed."""
    from ..controller.kube import ApiError, KubernetesApi

    if api is None:
        api = KubernetesApi.from_environment()
    labels = tuple(args.prepared_labels or PREPARED_LABELS)
    try:
        outcomes = prepare_nodes(api, dry_run=args.dry_run, prepared_labels=labels)
    except ApiError as exc:  # listing nodes failed: nothing was changed
        print(f"error: cannot list nodes: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        json.dump({"dryRun": args.dry_run, "nodes": [asdict(o) for o in outcomes]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_report(outcomes, args.dry_run))
    return 1 if any(o.action == "failed" for o in outcomes) else 0
