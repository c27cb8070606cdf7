"""provisioner.report: the unschedulable and ignored sections of the table share one grouping."""
from __future__ import annotations

from provisioner.report import render_table
from provisioner.result import Ignored, SimulationResult, Unschedulable


def test_table_groups_unschedulable_and_ignored_pods_by_reason_in_first_seen_order():
    result = SimulationResult(
        unschedulable=[Unschedulable("default/a", "no NodePool"), Unschedulable("default/b", "too big"),
                       Unschedulable("default/c", "no NodePool")],
        ignored=[Ignored("kube-system/d", "DaemonSet pod"), Ignored("default/e", "bound")], pods=3)
    assert render_table(result).split("Summary:")[0] == (
        "No new NodeClaims.\n\n"
        "Unschedulable pods (3):\n  default/a, default/c\n    why: no NodePool\n  default/b\n    why: too big\n\n"
        "Ignored pods, Karpenter does not provision for them (2):\n  kube-system/d\n    why: DaemonSet pod\n"
        "  default/e\n    why: bound\n\n")
