"""Independent replays on local worker processes (`--workers N`). A replay is a pure function of
its inputs and seed, so the results are the same whichever process runs it, in input order."""
from __future__ import annotations

import os
from dataclasses import replace
from concurrent.futures import ProcessPoolExecutor

from ..errors import InputError
from .engine import Options, replay
from .trace import Trace
from .twin import TWIN_FROM_S


def _one(job: tuple) -> dict:
    objects, origins, trace, options = job
    try:
        return replay(objects, origins, trace, options)
    except InputError as exc:
        # Raised in a worker process (or on a Dask worker), the error crosses back pickled; the
        # validation verdicts (InvalidObjects) do not unpickle and broke the pool with a traceback.
        # A plain InputError with the same located message does.
        raise InputError(exc.message, origin=exc.origin, obj=exc.obj, path=exc.path, line=exc.line,
                         column=exc.column) from None


def default_cpus() -> int:
    """The CPUs this process may run on (the default of --workers)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def twinned(until: float, workers: int, jobs: int) -> bool:
    """Whether a replay of `until` seconds, one of `jobs` sharing `workers` processes, gets a twin
    process (twin.py): when there are workers to spare and the replay is long enough to gain."""
    return workers >= 2 * jobs and until >= TWIN_FROM_S


def replay_all(jobs: list, workers: int | None = None, scheduler: str | None = None) -> list:
    """[(objects, origins, Trace, Options)] -> [result dict], in order; one process per job at
    most `workers` at a time (1: in this process, no pool; twice as many workers as jobs or more:
    each replay of a day or longer with a twin process, twin.py), or on the Dask scheduler at
    `scheduler` (replay/distributed.py, imported only then: an optional dependency)."""
    if scheduler:
        from .distributed import replay_on
        return replay_on(scheduler, jobs)
    workers = default_cpus() if workers is None else workers
    jobs = [(*job[:3], replace(job[3], processes=2)) if twinned(job[3].until, workers, len(jobs)) else job
            for job in jobs]
    if workers <= 1 or len(jobs) <= 1:
        return [_one(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(_one, jobs))


__all__ = ["Options", "Trace", "default_cpus", "replay_all", "twinned"]
