"""Independent replays on a Dask distributed cluster (`--scheduler ADDRESS`), for fleets that
outgrow one machine. An optional extra (`pip install 'karpenter-platform-provisioner[distributed]'`):
imported only when --scheduler is given. The jobs and the function are those of parallel.py, so
the results are the same whichever runs them, gathered in job order."""
from __future__ import annotations

from ..errors import InputError
from .parallel import _one

CONNECT_TIMEOUT_S = 10.0


def replay_on(scheduler: str, jobs: list, timeout: float | None = None) -> list:
    """[(objects, origins, Trace, Options)] -> [result dict], in order, run by the Dask scheduler
    at `scheduler` (e.g. tcp://10.0.0.5:8786). Exit 2 (InputError) when `distributed` is not
    installed or the scheduler does not answer within CONNECT_TIMEOUT_S."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise InputError(f"--scheduler needs Dask distributed ({exc}): "
                         "pip install 'karpenter-platform-provisioner[distributed]'") from None
    wait = CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        client = Client(scheduler, timeout=wait, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler within {wait:g} s: {exc}", origin=scheduler) from None
    with client:
        # pure=False: a replay is deterministic, but hashing every job's objects to dedupe costs
        # more than it saves; each job is its own task.
        futures = client.map(_one, jobs, pure=False)
        try:
            return client.gather(futures)
        except (ImportError, RuntimeError, OSError) as exc:
            # Mostly a scheduler or worker without the provisioner (it deserializes the jobs), or
            # a worker lost mid-run: an environment to fix, not a replay's answer.
            raise InputError(f"the Dask cluster could not run the replays ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:300]}); the scheduler and every "
                             "worker need the provisioner installed, the same version as here",
                             origin=scheduler) from None
