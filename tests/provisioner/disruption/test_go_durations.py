"""Durations beyond Go's int64 nanoseconds: the NodePool CRD patterns admit `2562048h`, but
time.ParseDuration (Karpenter's NillableDuration and metav1.Duration, pkg/apis/v1/nodepool.go)
cannot read it. The snapshot and drift readers refuse it with the limit, as quantities are."""
from __future__ import annotations

import pytest

from provisioner.disruption.drift_inputs import parse_duration
from provisioner.disruption.snapshot import go_duration, load_snapshot
from provisioner.errors import InputError

LIMIT = "2562047h47m16.854775807s"


def _pool(disruption: dict) -> dict:
    """Valid but for the one duration under test (the CRD requires consolidateAfter with budgets)."""
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}},
                     "disruption": {"consolidateAfter": "0s", **disruption}}}


@pytest.mark.parametrize("disruption, path", [
    ({"consolidateAfter": "2562048h"}, "spec.disruption.consolidateAfter"),
    ({"budgets": [{"nodes": "0", "schedule": "0 0 31 2 *", "duration": "2562048h"}]},
     "spec.disruption.budgets[0].duration"),
])
def test_snapshot_duration_beyond_int64_is_refused_with_the_limit(disruption, path):
    with pytest.raises(InputError) as err:
        load_snapshot([_pool(disruption)])
    assert path in str(err.value) and LIMIT in str(err.value)


def test_go_duration_reads_up_to_the_int64_limit():
    assert go_duration("2562047h") == 2562047 * 3600
    assert go_duration(LIMIT) is not None
    assert go_duration("2562047h47m16.854775808s") is None
    assert go_duration("9223372036854775808ns") is None


def test_drift_reader_refuses_expire_after_beyond_int64():
    assert parse_duration("2562047h", "spec.template.spec.expireAfter", None, "NodePool p") == 2562047 * 3600
    with pytest.raises(InputError) as err:
        parse_duration("2562048h", "spec.template.spec.expireAfter", "pool.yaml", "NodePool p")
    assert "spec.template.spec.expireAfter" in str(err.value) and LIMIT in str(err.value)
