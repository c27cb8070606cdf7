"""Config values Karpenter, Go or JSON read differently from their pattern: int64 durations,
schedules that never fire, non-finite budgets, fractional extended resources; and the build's JSON
files, which never hold Infinity or NaN."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from components.config.kube import check_budget_duration, check_karpenter_duration
from components.config.nodepools import Budget, NodePool
from components.config.teams import Team

POOL = {"name": "pool", "limits": {"cpu": "10"}}


@pytest.mark.parametrize("check", [check_karpenter_duration, check_budget_duration])
def test_duration_up_to_go_int64_is_accepted_and_one_hour_more_refused(check):
    """time.ParseDuration (Karpenter's NillableDuration, metav1.Duration) holds int64 nanoseconds."""
    assert check("2562047h") == "2562047h"
    with pytest.raises(ValueError, match="at most 2562047h47m16.854775807s"):
        check("2562048h")


def test_duration_seconds_are_counted_toward_the_limit():
    assert check_karpenter_duration("2562047h47m16s") == "2562047h47m16s"
    with pytest.raises(ValueError, match="int64"):
        check_karpenter_duration("2562047h47m17s")
    assert check_karpenter_duration("Never") == "Never"


@pytest.mark.parametrize("schedule", ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 feb *"])
def test_schedule_that_never_fires_is_refused(schedule):
    """robfig/cron Next returns the zero time, so Budget.IsActive (pkg/apis/v1/nodepool.go) keeps
    the budget active for ever."""
    with pytest.raises(ValidationError, match="never fires"):
        Budget.model_validate({"nodes": "0", "schedule": schedule, "duration": "1h"})


@pytest.mark.parametrize("schedule", ["0 0 29 2 *", "0 0 31 2 mon", "0 0 31 * *", "0 0 31 1,2 *", "@yearly",
                                      "0 0 */31 2 *"])
def test_schedule_that_fires_sometimes_is_accepted(schedule):
    """Day-of-week restricted too: either day field matches (robfig dayMatches), so it fires."""
    assert Budget.model_validate({"nodes": "0", "schedule": schedule, "duration": "1h"}).schedule == schedule


@pytest.mark.parametrize("budget", ["Infinity", "1e999", "-inf", float("inf"), float("nan")])
def test_team_budget_not_finite_is_refused(budget):
    with pytest.raises(ValidationError, match="finite"):
        Team.model_validate({"name": "web", "budget": {"prod": budget}, "nodePools": [POOL]})


@pytest.mark.parametrize("field", ["limits", "largestPod"])
def test_fractional_extended_resource_is_refused_whole_accepted(field):
    """k8s.io/kubernetes pkg/apis/core/validation: extended resources "must be an integer"."""
    with pytest.raises(ValidationError, match="nvidia.com/gpu: '0.5' must be an integer"):
        NodePool.model_validate({**POOL, field: {"cpu": "1", "nvidia.com/gpu": "0.5"}})
    pool = NodePool.model_validate({**POOL, field: {"cpu": "500m", "nvidia.com/gpu": "2"}})
    assert getattr(pool, "limits" if field == "limits" else "largest_pod")["nvidia.com/gpu"] == "2"


def test_build_never_holds_infinity(tmp_path):
    """A non-finite number anywhere in the capture stops write_build before anything is written
    (json.dumps(allow_nan=False)); the old writer put a bare `Infinity` in the file."""
    from offline.monitor import Capture
    from offline.render import write_build

    out = tmp_path / "build" / "test"
    with pytest.raises(ValueError):
        write_build(Capture(outputs={"budget": float("inf")}), out)
    assert not out.exists() and list((tmp_path / "build").iterdir()) == []
    write_build(Capture(outputs={"budget": 20.0}), out)
    assert json.loads((out / "outputs.json").read_text()) == {"budget": 20.0}


# --- gp3 volumes EC2 refuses at launch ----------------------------------------------------------

def _nodeclass(**settings):
    from components.config.nodeclasses import NodeClass
    return NodeClass.model_validate(settings)


@pytest.mark.parametrize("volume, accepted", [
    ({"throughput": 750}, True),  # 0.25 MiB/s per IOPS of the 3,000 baseline
    ({"throughput": 751}, False),
    ({"iops": 4000, "throughput": 1000}, True),
    ({"iops": 3999, "throughput": 1000}, False),
    ({"size": "20Gi", "iops": 10000}, True),  # 20Gi is 22 GiB as Karpenter sends it (ScaledValue(Giga))
    ({"size": "20Gi", "iops": 16000}, False),  # 500 IOPS per GiB: needs 32 GiB
    ({"size": "32G", "iops": 16000}, True),
])
def test_gp3_root_volume_as_ec2_reads_it(volume, accepted):
    """EBS gp3: at most 500 IOPS per GiB and 0.25 MiB/s of throughput per IOPS, else
    RunInstances refuses the launch (the config used to render it)."""
    if accepted:
        assert _nodeclass(rootVolume=volume).root_volume.type == "gp3"
    else:
        with pytest.raises(ValidationError, match="per (GiB|IOPS)"):
            _nodeclass(rootVolume=volume)


def test_gp3_block_device_mapping_is_checked_too():
    mapping = {"deviceName": "/dev/xvda", "rootVolume": True,
               "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "throughput": 1000}}
    with pytest.raises(ValidationError, match="0.25 MiB/s per IOPS"):
        _nodeclass(blockDeviceMappings=[mapping])
    _nodeclass(blockDeviceMappings=[{**mapping, "ebs": {**mapping["ebs"], "volumeType": "io2", "iops": 4000,
                                                        "throughput": None}}])


@pytest.mark.parametrize("alias, size, accepted", [
    ("al2023@v20251117", "18Gi", True),  # 20 GiB as Karpenter sends it (ScaledValue(Giga), rounded up)
    ("al2023@v20251117", "17Gi", False),
    ("bottlerocket@v1.50.0", "10Gi", False),
    ("windows2022@latest", "40Gi", False),
    ("windows2022@latest", "50Gi", True),
])
def test_root_volume_below_the_ami_snapshot_is_refused(alias, size, accepted):
    """EC2: "Volume of size N is smaller than snapshot"; the EKS AMIs' root snapshots are
    Karpenter's default sizes (20 GiB; Windows 50 GiB; Bottlerocket's data volume 20 GiB)."""
    settings = {"amiAlias": alias, "rootVolume": {"size": size}, "allowLatestAmi": alias.endswith("@latest")}
    if accepted:
        _nodeclass(**settings)
    else:
        with pytest.raises(ValidationError, match="root snapshot"):
            _nodeclass(**settings)
