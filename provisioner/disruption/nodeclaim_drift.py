"""Which NodePools and EC2NodeClasses drift when manifests change, and which nodes Karpenter replaces.

Pure: objects in, a DriftReport out. Follows Karpenter v1.14.1:

* kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go `NodePool.Hash()`: the static hash covers
  `spec.template` only (metadata labels and annotations, taints, startupTaints, nodeClassRef,
  expireAfter, terminationGracePeriod); `requirements` carry `hash:"ignore"`; limits, weight and
  the disruption block are outside the template. Options SlicesAsSets, IgnoreZeroValue, ZeroNil.
* pkg/controllers/nodeclaim/disruption/drift.go: static drift compares the nodepool-hash
  annotations (only when both the NodeClaim and the NodePool carry hash and version, and the
  versions match); requirement drift is decided per NodeClaim from its labels
  (`NewLabelRequirements(labels).Compatible(nodePoolRequirements)`); NodeClaims not Launched
  never drift.
* aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go `EC2NodeClass.Hash()`: the spec minus
  the fields tagged `hash:"ignore"` (subnet, security group, capacity reservation and AMI
  selector terms, amiFamily, ipPrefixCount), plus the AMI family resolved from the alias.
* pkg/cloudprovider/drift.go: AMI, subnet, security group and capacity reservation drift are
  decided from the EC2NodeClass status against the instance. Offline, the status of the new
  selector terms is unknown, so a change of terms is judged from the terms themselves: subnets
  drift unless every old term is kept (terms are ORed: more terms select more subnets),
  security groups drift unless the terms select the same set, AMIs drift unless the terms are
  the same.

We compare canonical forms of the counted fields, not Go's hashstructure bytes. The hash views
are in drift_inputs.py, requirement logic in node_requirements.py; the snapshot's nodes are read
by the one cluster reader, provisioner.state.reader.load_cluster(facts=True).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..screen import screen
from ..state.reader import load_cluster
from .drift_inputs import Machine, NodeClass, NodePool, candidates, diff_paths, read_manifests
from .node_requirements import labels_compatible, requirements_admit_all

NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
POOL_KINDS = ("hash", "requirements", "nodeclass", "removed")
NODECLASS_KINDS = ("hash", "ami", "subnets", "securitygroups", "removed")


@dataclass(frozen=True, order=True)
class Cause:
    path: str
    kind: str

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind}


@dataclass
class NodePoolDrift:
    name: str
    causes: list[Cause] = field(default_factory=list)
    nodes: int | None = None
    added: bool = False
    """New in `after` (a renamed pool is a new pool): the table says `added`, not `no`."""

    @property
    def drift(self) -> bool:
        return bool(self.causes)

    def to_dict(self) -> dict:
        return {"name": self.name, "drift": self.drift, "causes": [c.to_dict() for c in self.causes],
                "nodes": self.nodes}


@dataclass
class NodeClassDrift:
    name: str
    causes: list[Cause] = field(default_factory=list)
    added: bool = False

    @property
    def drift(self) -> bool:
        return bool(self.causes)

    def to_dict(self) -> dict:
        return {"name": self.name, "drift": self.drift, "causes": [c.to_dict() for c in self.causes]}


@dataclass
class DriftReport:
    nodepools: list[NodePoolDrift]
    nodeclasses: list[NodeClassDrift]
    with_snapshot: bool = False
    # pool name -> names of the nodes it would replace (only with a snapshot); not part of the JSON
    replaced: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Exactly the `provisioner drift -o json` shape."""
        replaced = sum(p.nodes or 0 for p in self.nodepools) if self.with_snapshot else None
        return {"nodepools": [p.to_dict() for p in self.nodepools],
                "nodeclasses": [c.to_dict() for c in self.nodeclasses],
                "summary": {"nodepools_drifted": sum(p.drift for p in self.nodepools), "nodes_replaced": replaced}}



def nodepool_causes(before: NodePool, after: NodePool) -> list[Cause]:
    """Static (hash) and requirement causes of one NodePool change."""
    causes = [Cause(p, "hash") for p in diff_paths(before.hashed, after.hashed, "spec.template")]
    if before.raw_requirements != after.raw_requirements and not requirements_admit_all(
            before.requirements, after.requirements, before.template_labels):
        causes.append(Cause("spec.template.spec.requirements", "requirements"))
    return causes


def nodeclass_causes(before: NodeClass, after: NodeClass) -> list[Cause]:
    """Static (hash) causes plus what cloudprovider/drift.go decides dynamically, judged offline."""
    causes = [Cause(p, "hash") for p in diff_paths(before.hashed, after.hashed, "spec")]
    old, new = before.terms, after.terms
    if old["amiSelectorTerms"] != new["amiSelectorTerms"]:
        causes.append(Cause("spec.amiSelectorTerms", "ami"))
    if not all(term in new["subnetSelectorTerms"] for term in old["subnetSelectorTerms"]):
        causes.append(Cause("spec.subnetSelectorTerms", "subnets"))
    if old["securityGroupSelectorTerms"] != new["securityGroupSelectorTerms"]:
        causes.append(Cause("spec.securityGroupSelectorTerms", "securitygroups"))
    return sorted(causes)


def reservations_dropped(before: NodeClass, after: NodeClass) -> bool:
    """Capacity reservation drift is possible when a reservation the old terms selected may no
    longer be selected (isCapacityReservationDrifted compares the instance's reservation with status)."""
    old, new = before.terms["capacityReservationSelectorTerms"], after.terms["capacityReservationSelectorTerms"]
    return not all(term in new for term in old)


def reservation_drifts(machine: Machine, after: NodeClass) -> bool:
    """A reserved node drifts when its reservation is no longer selected: an `id` term names
    another reservation and no tag/owner/match-criteria term could select it."""
    if machine.labels.get(CAPACITY_TYPE_LABEL) != "reserved":
        return False
    terms = after.terms["capacityReservationSelectorTerms"]
    if any(set(t) != {"id"} for t in terms):
        return True  # selection by tags can't be resolved offline: count it as possibly drifting
    return machine.labels.get(RESERVATION_ID_LABEL) not in {t["id"] for t in terms}


def _static_hash_applies(machine: Machine, owner_annotations: Mapping[str, str], hash_key: str,
                         version_key: str) -> bool:
    """areStaticFieldsDrifted: no hash or version on the NodeClaim (or a version differing from the
    owner's) means no static drift. Nodes known only as Node objects are assumed annotated."""
    if machine.claim_annotations is None:
        return True
    if hash_key not in machine.claim_annotations or version_key not in machine.claim_annotations:
        return False
    owner_version = owner_annotations.get(version_key)
    return owner_version is None or owner_version == machine.claim_annotations[version_key]


def drift(before: Sequence[Any], after: Sequence[Any], snapshot: Sequence[Any] | None = None, *,
          before_origins: Sequence[str] | None = None, after_origins: Sequence[str] | None = None,
          snapshot_origins: Sequence[str] | None = None) -> DriftReport:
    """What drifts going from `before` to `after` manifests, and (with a snapshot) which nodes go.
    Karpenter objects are judged first (provisioner.screen): an invalid one raises InvalidObjects."""
    for objects, origins in ((before, before_origins), (after, after_origins), (snapshot, snapshot_origins)):
        if objects is not None:
            screen(list(objects), origins)
    pools_before, classes_before = read_manifests(before, before_origins)
    pools_after, classes_after = read_manifests(after, after_origins)
    machines = (candidates(load_cluster(list(snapshot), snapshot_origins, judged=True, facts=True), pools_before)
                if snapshot is not None else None)

    class_reports: dict[str, NodeClassDrift] = {}
    for name in sorted(set(classes_before) | set(classes_after)):
        if name not in classes_after:
            # The finalizer waits for the NodeClaims using it (nodeclass/controller.go finalize),
            # and IsDrifted cannot resolve it (cloudprovider.go): its nodes are not replaced.
            class_reports[name] = NodeClassDrift(name, [Cause("", "removed")])
        elif name not in classes_before:
            class_reports[name] = NodeClassDrift(name, added=True)
        else:
            class_reports[name] = NodeClassDrift(name, nodeclass_causes(classes_before[name], classes_after[name]))

    pool_reports: list[NodePoolDrift] = []
    replaced_names: dict[str, list[str]] = {}
    for name in sorted(set(pools_before) | set(pools_after)):
        mine = [m for m in machines or [] if m.pool == name]
        old, new = pools_before.get(name), pools_after.get(name)
        if old is None:
            pool_reports.append(NodePoolDrift(name, [], 0 if machines is not None else None, added=True))
            continue
        if new is None:
            # NodeClaims carry an ownerReference to their NodePool (scheduling/nodeclaimtemplate.go),
            # so deleting the NodePool deletes every NodeClaim of it.
            pool_reports.append(NodePoolDrift(name, [Cause("", "removed")], len(mine) if machines is not None else None))
            replaced_names[name] = [m.name for m in mine]
            continue
        causes = nodepool_causes(old, new)
        replaced: set[str] = set()
        for machine in mine:
            if any(c.kind == "hash" for c in causes) and _static_hash_applies(
                    machine, old.annotations, NODEPOOL_HASH, NODEPOOL_HASH_VERSION):
                replaced.add(machine.name)
            if any(c.kind == "requirements" for c in causes) and not labels_compatible(machine.labels, new.requirements):
                replaced.add(machine.name)
        nodeclass = old.nodeclass
        if nodeclass in classes_before and nodeclass in classes_after:
            class_causes = [c for c in class_reports[nodeclass].causes if c.kind != "removed"]
            reservations = reservations_dropped(classes_before[nodeclass], classes_after[nodeclass])
            causes += [Cause(c.path, "nodeclass") for c in class_causes]
            if reservations:
                causes.append(Cause("spec.capacityReservationSelectorTerms", "nodeclass"))
            for machine in mine:
                if machine.nodeclass != nodeclass:
                    continue
                for cause in class_causes:
                    if cause.kind != "hash" or _static_hash_applies(
                            machine, classes_before[nodeclass].annotations, NODECLASS_HASH, NODECLASS_HASH_VERSION):
                        replaced.add(machine.name)
                if reservations and reservation_drifts(machine, classes_after[nodeclass]):
                    replaced.add(machine.name)
        causes = sorted(set(causes), key=lambda c: (POOL_KINDS.index(c.kind), c.path))
        pool_reports.append(NodePoolDrift(name, causes, len(replaced) if machines is not None else None))
        replaced_names[name] = sorted(replaced)
    return DriftReport(pool_reports, [class_reports[n] for n in sorted(class_reports)], machines is not None,
                       replaced_names if machines is not None else {})
