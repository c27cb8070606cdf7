"""`cost.json`: NodePools listed by name, whatever order the render declared them in."""

from offline.cost import cost_report
from tests.harness import manifests, render


def test_cost_report_lists_nodepools_by_name_whatever_the_input_order():
    capture = render("staging")
    objects = manifests(capture, "EC2NodeClass") + manifests(capture, "NodePool")
    forward, backward = cost_report(objects), cost_report(list(reversed(objects)))
    names = [pool["nodepool"] for pool in forward["nodepools"]]
    assert names == sorted(m["metadata"]["name"] for m in manifests(capture, "NodePool"))
    assert backward == forward
