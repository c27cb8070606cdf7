"""Builders for replay tests: one m5 on-demand NodePool, workloads, traces, and running the command."""
from __future__ import annotations

from tests.provisioner.prov_builders import nodeclass as prov_nodeclass

import json

import yaml

from provisioner.cli import main


def nodeclass(name="default"):
    """A valid EC2NodeClass (the replay judges its inputs as the API server would)."""
    return prov_nodeclass(name)


def nodepool(name="default", policy="WhenEmptyOrUnderutilized", after="30s", budgets=None, expire=None, grace=None,
             family="m5", labels=None, types=None):
    reqs = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [family]}]
    if types:
        reqs.append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)})
    tspec = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
             "requirements": reqs}
    if expire:
        tspec["expireAfter"] = expire
    if grace:
        tspec["terminationGracePeriod"] = grace
    disruption = {"consolidationPolicy": policy, "consolidateAfter": after}
    if budgets is not None:
        disruption["budgets"] = budgets
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": dict(labels or {})}, "spec": tspec}, "disruption": disruption}}


def template(cpu="1", memory="1Gi", app="web", annotations=None, node_selector=None):
    spec = {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    meta = {"labels": {"app": app}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "spec": spec}


def deployment(name="web", replicas=1, namespace="default", **kw):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": kw.get("app", name)}},
                     "template": template(app=kw.pop("app", name), **kw)}}


def job(name="etl", parallelism=1, completions=1, namespace="default", **kw):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"parallelism": parallelism, "completions": completions,
                     "template": template(app=kw.pop("app", name), **kw)}}


def cronjob(name="cron", schedule="*/15 * * * *", namespace="default", **kw):
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": template(app=kw.pop("app", name), **kw)}}}}


def pdb(name="web", app="web", min_available=None, max_unavailable=None, namespace="default"):
    spec = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def write(tmp_path, name, *docs) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def write_trace(tmp_path, events, name="trace.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"events": list(events)}))
    return str(path)


def replay(capsys, tmp_path, manifests, events, *args, until="2h"):
    """Run `provisioner replay -o json`; (exit code, parsed JSON or None, stderr)."""
    files = write(tmp_path, "cluster.yaml", *manifests)
    trace = write_trace(tmp_path, events)
    code = main(["replay", "-f", files, "--trace", trace, "--until", until, "-o", "json", *args])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out else None), out.err


def base():
    return [nodeclass(), nodepool()]


def random_event(kind, name, replicas, seconds, run_for, cpus=("100m", "1", "3", "250m")):
    """One trace event for property tests, from a drawn (kind, name, replicas, seconds, run_for)."""
    at = f"{seconds}s"
    if kind == "deploy":
        return {"at": at, "apply": deployment(name, replicas=replicas, cpu=cpus[replicas % len(cpus)])}
    if kind == "job":
        return {"at": at, "apply": job(name, parallelism=replicas, completions=replicas + 1), "runFor": f"{run_for}s"}
    if kind == "cron":
        return {"at": at, "apply": cronjob(name, schedule="*/7 * * * *"), "runFor": f"{run_for}s"}
    if kind == "pdb":
        return {"at": at, "apply": pdb(name, app=name, max_unavailable=replicas % 2)}
    if kind == "scale":
        return {"at": at, "scale": {"kind": "Deployment", "name": name, "replicas": replicas}}
    if kind == "delete":
        return {"at": at, "delete": {"kind": "Deployment", "name": name}}
    if kind == "interrupt-node":
        return {"at": at, "interrupt": {"node": f"default-0000{replicas % 3 + 1}"}}
    return {"at": at, "interrupt": {"instanceType": "m5.large", "fraction": 0.5}}
