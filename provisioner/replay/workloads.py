"""Workload controllers as the replay runs them: the pod template of a Deployment, StatefulSet,
ReplicaSet, Job or CronJob (read by the scheduling loader, so a pod here schedules exactly as in
`simulate`), how many pods it wants, and how long a Job's pods run.

A Job's pods run for `runFor` (the trace event's key, else the pod template's annotation
karpenter-platform.io/run-for), then complete; the Job keeps `parallelism` pods running until
`completions` have succeeded (pkg/controller/job of kubernetes/kubernetes). A CronJob creates a
Job at each firing of its schedule (robfig/cron syntax, provisioner.disruption.cron), named
`<cronjob>-<minutes since the epoch>` as the CronJob controller names them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..disruption.cron import CronError, Schedule
from ..errors import InputError
from ..loader.fields import Ctx
from ..loader.pods import load_controller, load_pod
from ..models import PodSpec
from .trace import parse_duration

RUN_FOR_ANNOTATION = "karpenter-platform.io/run-for"
# The ownerReference a controller's pods carry (ReplicaSets own a Deployment's pods).
OWNERS = {"Deployment": ("apps/v1", "ReplicaSet"), "ReplicaSet": ("apps/v1", "ReplicaSet"),
          "StatefulSet": ("apps/v1", "StatefulSet"), "Job": ("batch/v1", "Job"), "CronJob": ("batch/v1", "Job")}


@dataclass(eq=False)
class Workload:
    kind: str
    namespace: str
    name: str
    spec: PodSpec  # of its pods
    labels: dict
    annotations: dict
    replicas: int  # pods it keeps (a Job: parallelism)
    completions: int | None = None  # a Job: successes it needs; None: as many as parallelism
    run_for: float | None = None  # a Job's pods' run time; None: they run to the end of the replay
    schedule: Schedule | None = None  # a CronJob
    schedule_text: str = ""
    concurrency: str = "Allow"  # a CronJob's concurrencyPolicy
    job_template: dict | None = None  # a CronJob: the Job object it creates
    succeeded: int = 0
    created: int = 0  # pods created so far (names are <name>-<n>)
    pods: list = field(default_factory=list)  # SimPods alive, oldest first
    parent: tuple | None = None  # a CronJob's Job: the CronJob's key
    raw_spec: dict | None = None  # the pod template's spec as given (for the disruption API's object reader)

    @property
    def key(self) -> tuple:
        return (self.kind, self.namespace, self.name)

    @property
    def owner(self) -> tuple | None:
        return OWNERS.get(self.kind)

    @property
    def wanted(self) -> int:
        """Pods the controller keeps now: replicas, or a Job's parallelism capped by what it still needs."""
        if self.kind == "CronJob":
            return 0
        if self.kind == "Job":
            left = (self.completions if self.completions is not None else self.replicas) - self.succeeded
            return max(0, min(self.replicas, left))
        return self.replicas


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def key_of(obj: dict) -> tuple:
    meta = _meta(obj)
    return (obj.get("kind"), str(meta.get("namespace") or "default"), str(meta.get("name")))


def _run_for(template_meta: dict, run_for: float | None, ctx: Ctx, path: str) -> float | None:
    if run_for is not None:
        return run_for
    raw = template_meta.get("annotations")
    annotations: dict = raw if isinstance(raw, dict) else {}
    value = annotations.get(RUN_FOR_ANNOTATION)
    if value is None:
        return None
    try:
        return parse_duration(value, "", "")
    except InputError:
        raise ctx.error(f"{path}.metadata.annotations.{RUN_FOR_ANNOTATION}",
                        f"invalid duration {value!r} (expected e.g. 10m)") from None


def load_workload(obj: dict, origin: str | None, namespaces: dict, run_for: float | None = None,
                  require_run_for: bool = False) -> Workload:
    """A Workload from a Deployment, StatefulSet, ReplicaSet, Job, CronJob or Pod object; raises
    InputError (origin, object and key path). `require_run_for`: a Job from the trace must say how
    long it runs."""
    kind, namespace, name = key_of(obj)
    ctx = Ctx(origin, kind, f"{namespace}/{name}")
    spec = ctx.mapping(obj.get("spec"), "spec")
    if kind == "Pod":
        pod = load_pod(obj, ctx, namespaces)
        meta = _meta(obj)
        return Workload(kind, namespace, name, pod.spec, dict(meta.get("labels") or {}),
                        dict(meta.get("annotations") or {}), 1, completions=None, raw_spec=spec)
    if kind == "CronJob":
        text = ctx.string(spec.get("schedule"), "spec.schedule")
        try:
            schedule = Schedule(text)
        except CronError as exc:
            raise ctx.error("spec.schedule", f"invalid cron {text!r}: {exc}") from None
        job_tpl = ctx.mapping(spec.get("jobTemplate"), "spec.jobTemplate")
        job: dict[str, Any] = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {**ctx.mapping(job_tpl.get("metadata"), "spec.jobTemplate.metadata"), "name": name,
                         "namespace": namespace},
            "spec": ctx.mapping(job_tpl.get("spec"), "spec.jobTemplate.spec")}
        inner = load_workload(job, origin, namespaces, run_for, False)  # validates the template
        tmeta = ((job["spec"].get("template") or {}).get("metadata") or {}) if isinstance(job["spec"].get("template"), dict) else {}
        inner_run = _run_for(tmeta if isinstance(tmeta, dict) else {}, run_for, ctx, "spec.jobTemplate.spec.template")
        if inner_run is None and require_run_for:
            raise ctx.error("runFor", f"a CronJob's Jobs must say how long they run: runFor on the event or the "
                                      f"annotation {RUN_FOR_ANNOTATION} on spec.jobTemplate.spec.template")
        policy = ctx.string(spec.get("concurrencyPolicy"), "spec.concurrencyPolicy", "Allow")
        if policy not in ("Allow", "Forbid", "Replace"):
            raise ctx.error("spec.concurrencyPolicy", f"expected Allow, Forbid or Replace, got {policy!r}")
        return Workload(kind, namespace, name, inner.spec, inner.labels, inner.annotations, 0, run_for=inner_run,
                        schedule=schedule, schedule_text=text, concurrency=policy, job_template=job,
                        raw_spec=inner.raw_spec)
    if kind not in OWNERS:
        raise ctx.error("kind", f"not a workload the replay runs: {kind}")
    pods = load_controller(obj, ctx, kind, namespaces, count=1)
    template = ctx.mapping(spec.get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    labels = dict(pods[0].spec.labels)
    annotations = ctx.string_map(tmeta.get("annotations"), "spec.template.metadata.annotations")
    if kind == "Job":
        replicas = ctx.integer(spec.get("parallelism"), "spec.parallelism", 1)
        completions = ctx.integer(spec.get("completions"), "spec.completions")
        if replicas < 0 or (completions is not None and completions < 0):
            raise ctx.error("spec.parallelism", "must be zero or more")
        job_run = _run_for(tmeta, run_for, ctx, "spec.template")
        if job_run is None and require_run_for:
            raise ctx.error("runFor", f"a Job must say how long its pods run: runFor on the event or the annotation "
                                      f"{RUN_FOR_ANNOTATION} on spec.template")
        return Workload(kind, namespace, name, pods[0].spec, labels, annotations, replicas,
                        completions=completions if completions is not None else replicas, run_for=job_run,
                        raw_spec=template.get("spec"))
    replicas = ctx.integer(spec.get("replicas"), "spec.replicas", 1)
    if replicas < 0:
        raise ctx.error("spec.replicas", f"must be zero or more, got {replicas}")
    return Workload(kind, namespace, name, pods[0].spec, labels, annotations, replicas, raw_spec=template.get("spec"))
