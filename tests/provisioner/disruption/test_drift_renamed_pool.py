"""`provisioner drift` on an imported pool: the importer renders NodePool `default` as `<team>-default`,
a new NodePool (Kubernetes names are identities), so the table says `added`, not `no` (docs/importing.md
"Migrating live pools")."""

from __future__ import annotations

from provisioner.commands.drift import render_table
from provisioner.disruption.drift import drift
from tests.provisioner.disruption.test_drift import nodeclass, nodepool


def test_renamed_pool_is_reported_added_and_the_old_one_removed():
    report = drift([nodepool("default"), nodeclass()], [nodepool("web-default"), nodeclass()])
    rows = {line.split()[0]: line.split()[1:] for line in render_table(report).splitlines()[1:3]}
    assert rows == {"default": ["yes", "-", "removed"], "web-default": ["added", "-", "-"]}


def test_new_nodeclass_is_reported_added():
    report = drift([nodepool()], [nodepool(), nodeclass("imported")])
    assert "imported      added  -" in render_table(report)
