"""`kubelet` from the NodePools to their EC2NodeClasses, which the conversion webhooks leave to the
user (website/content/en/v1.0/upgrading/v1-migration.md "Kubelet Configuration Migration"): NodePools
sharing a node class with different kubelet settings need one node class per setting."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from ..imports import Document
from .common import GUIDE, Log


@dataclass
class Pool:
    source: Document
    """The original object (messages name its key paths)."""
    body: dict[str, Any]
    """The v1 NodePool, changed in place when it moves to a node class copy."""
    kubelet: dict[str, Any] | None


def _key(kubelet: dict | None) -> str:
    return json.dumps(kubelet, sort_keys=True)


def move_kubelet(pools: list[Pool], classes: dict[str, dict[str, Any]], log: Log) -> dict[str, tuple[str, dict]]:
    """Put each pool's kubelet on its node class (`classes`: name -> v1 body, changed in place).
    Returns the node class copies made: new name -> (name copied, v1 body)."""
    copies: dict[str, tuple[str, dict]] = {}
    by_class: dict[str, dict[str, list[Pool]]] = {}
    for pool in pools:
        name = pool.body["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        by_class.setdefault(name, {}).setdefault(_key(pool.kubelet), []).append(pool)
    for name, groups in by_class.items():
        with_kubelet = [g for key, g in groups.items() if key != "null"]
        if not with_kubelet:
            continue
        if name not in classes:
            for group in with_kubelet:
                for pool in group:
                    log.lost(pool.source, _path(pool), f"not carried: v1 sets kubelet on the EC2NodeClass, and {name!r} is "
                             f"not among the input; set nodeClasses.{name}.kubelet to {group[0].kubelet} in the stack "
                             f"(every NodePool using {name!r} gets it; {GUIDE}, \"Kubelet Configuration Migration\")")
            continue
        # The class keeps the pools without kubelet if there are any, else the first group.
        keep = None if "null" in groups else with_kubelet[0]
        for group in with_kubelet:
            if group is keep:
                classes[name].setdefault("spec", {})["kubelet"] = copy.deepcopy(group[0].kubelet)
                for pool in group:
                    log.changed(pool.source, _path(pool), f"moved to EC2NodeClass {name!r} spec.kubelet (v1 keeps kubelet "
                                f"on the node class; {GUIDE}, \"Kubelet Configuration Migration\")")
                continue
            first = group[0].body["metadata"]["name"]
            new_name = f"{name}-{first}"[:63].rstrip("-")
            body = copy.deepcopy(classes[name])
            body["metadata"]["name"] = new_name
            body["spec"]["kubelet"] = copy.deepcopy(group[0].kubelet)
            copies[new_name] = (name, body)
            for pool in group:
                pool.body["spec"]["template"]["spec"]["nodeClassRef"]["name"] = new_name
                log.changed(pool.source, _path(pool), f"moved to a copy of EC2NodeClass {name!r} named {new_name!r}, which "
                            f"this NodePool now references: NodePools sharing {name!r} have different kubelet settings, and "
                            f"v1 keeps kubelet on the node class ({GUIDE}, \"Kubelet Configuration Migration\")")
    return copies


def _provisioner(pool: Pool) -> bool:
    return pool.source.body.get("kind") == "Provisioner"


def _path(pool: Pool) -> str:
    if not _provisioner(pool):
        return "spec.template.spec.kubelet"
    return "spec.kubeletConfiguration" if "kubeletConfiguration" in pool.source.body.get("spec", {}) else "spec.kubelet"
