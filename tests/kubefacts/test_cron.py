"""Budget schedules: one parser (kubefacts.cron, after robfig/cron v3 ParseStandard, which
Karpenter's pkg/apis/v1/nodepool.go uses) for the config's check and the provisioner's
Budget.IsActive, so a schedule gets the same verdict in both."""
from datetime import datetime

import pytest

from components.config.kube import check_cron
from kubefacts import cron
from provisioner.disruption.cron import CronError, Schedule


@pytest.mark.parametrize("schedule", ["0 9 * * mon-fri", "@daily", "*/15 9-17 * * *", "0 0 1,15 * sun", "5 4 * 1-3/2 ?"])
def test_a_schedule_the_config_accepts_the_provisioner_reads(schedule):
    assert cron.problem(schedule) is None
    assert check_cron(schedule) == schedule
    Schedule(schedule)


@pytest.mark.parametrize("schedule", [
    "\u0661 * * * *",  # an Arabic-Indic digit: str.isdigit() took it, strconv.Atoi does not
    "61 * * * *", "0 25 * * *", "a b c d e", "@every 1h", "0 9 * *", "0 17-9 * * *", "*/0 * * * *",
])
def test_a_schedule_the_config_refuses_the_provisioner_refuses_in_the_same_words(schedule):
    reason = cron.problem(schedule)
    assert reason is not None
    with pytest.raises(ValueError) as config:
        check_cron(schedule)
    with pytest.raises(CronError) as provisioner:
        Schedule(schedule)
    assert reason in str(config.value) and str(provisioner.value) == reason


def test_days_of_month_and_week_match_either_when_both_are_restricted():
    s = cron.parse("0 0 1 * mon")
    assert not s.dom_star and not s.dow_star and s.days_of_month == {1} and s.days_of_week == {1}
    assert Schedule("0 0 1 * mon").matches(datetime(2026, 11, 2)) and Schedule("0 0 1 * mon").matches(datetime(2026, 12, 1))
