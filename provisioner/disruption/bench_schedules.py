"""`python -m provisioner.disruption.bench_schedules [HOURS]`: time Budget.IsActive (cron.is_active)
for the schedules that cost the most, at a budget duration of HOURS (default 2562047h, the most
Karpenter can read: time.ParseDuration holds int64 nanoseconds). Prints one row per schedule."""
from __future__ import annotations

import sys
import time
from datetime import datetime

from .cron import is_active

# Never fires; fires once in four years; the last minute of the year; every minute.
SCHEDULES = ("0 0 31 2 *", "0 0 30 2 *", "0 0 29 2 *", "59 23 31 12 *", "* * * * *")
NOW = datetime(2026, 11, 27, 12, 0)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    hours = int(args[0]) if args else 2562047
    print(f"{'schedule':<16} {'duration':>9} {'active':>6} {'seconds':>9}")
    for schedule in SCHEDULES:
        started = time.perf_counter()
        active = is_active(schedule, hours * 3600, NOW)
        print(f"{schedule:<16} {hours:>8}h {str(active):>6} {time.perf_counter() - started:>9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
