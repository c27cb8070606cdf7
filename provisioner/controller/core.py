"""The advisor's only contact with the scheduling core: plan, validate, catalogs.

Kept in one module so that the controller itself can be tested with a fake plan, and so that
a change in the core's public API has one place to land.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from importlib import resources
from typing import Any, Callable

from ..api import simulate
from ..catalog import SHIPPED, shipped_catalog
from ..disruption.causes import cause_of
from ..disruption.consolidation import consolidate
from ..disruption.snapshot import load_snapshot
from .catalog import CatalogHolder
from .worker import PlanWorker

log = logging.getLogger(__name__)


def validate(obj: dict) -> None:
    """Raises InputError when the core cannot use this one object (checked on arrival, so a bad
    object is skipped and counted instead of failing every plan)."""
    load_snapshot([obj])  # the scheduling loader, plus what consolidation reads (disruption, PDBs)


def plan_objects(objects: list, region: str, *, catalog: Any = None) -> dict:
    """The plan of `objects` (simulate's JSON shape): what the worker process runs."""
    return simulate(objects, catalog=catalog, region=region).to_dict()


def consolidate_objects(objects: list, now: float, region: str, *, catalog: Any = None) -> dict:
    """The consolidation what-if on the cached objects at `now` (Unix time; scheduled budgets):
    the `consolidate -o json` shape, plus `candidates` (method -> eligible nodes) and `causes`
    (one short cause per blocked node). What the worker process runs."""
    at = datetime.fromtimestamp(now, timezone.utc).replace(tzinfo=None)
    result = consolidate(load_snapshot(objects), catalog=catalog, region=region, now=at)
    return {**result.to_dict(), "candidates": dict(result.candidates),
            "causes": [cause_of(why) for _, why in result.blocked]}


# What `PlanWorker` runs, by name.
WORKER_FUNCTIONS = {"plan": f"{__name__}:plan_objects", "consolidate": f"{__name__}:consolidate_objects"}


def _catalog(holder: CatalogHolder) -> tuple[Any, Any]:
    """The current catalog and a token that changes when it does (the worker keeps the last one sent)."""
    choice = holder.current
    if choice is None:
        return None, ("none",)
    return choice.catalog, (choice.source, choice.as_of, id(choice.catalog))


def make_plan(holder: CatalogHolder, region: str, worker: PlanWorker | None = None) -> Callable[[list], dict]:
    """The plan function the controller calls: in `worker` (off the loop, with its time budget)
    when given, else in this process."""
    def plan(objects: list) -> dict:
        catalog, token = _catalog(holder)
        if worker is not None:
            return worker.call("plan", objects, region, catalog=catalog, catalog_token=token)
        return plan_objects(objects, region, catalog=catalog)

    return plan


def make_consolidate(holder: CatalogHolder, region: str, worker: PlanWorker | None = None
                     ) -> Callable[[list, float], dict]:
    """The consolidation what-if the controller calls (see consolidate_objects), in `worker` when given."""
    def run(objects: list, now: float) -> dict:
        catalog, token = _catalog(holder)
        if worker is not None:
            return worker.call("consolidate", objects, now, region, catalog=catalog, catalog_token=token)
        return consolidate_objects(objects, now, region, catalog=catalog)

    return run


def bundled_as_of() -> float | None:
    """The shipped catalog's build date (`generated`), for the catalog-age metric."""
    try:
        data = json.loads(resources.files("provisioner").joinpath(SHIPPED).read_text(encoding="utf-8"))
        day = datetime.strptime(str(data["generated"]), "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return day.timestamp()
    except (KeyError, ValueError, OSError) as exc:
        log.warning("shipped catalog has no usable build date: %s", exc)
        return None


def load_bundled() -> tuple[Any, float | None]:
    return shipped_catalog(), bundled_as_of()


def live_loader(region: str) -> Callable[[], tuple[Any, float | None]]:
    """The core's live-AWS catalog for `region` (EC2 and Pricing APIs, through boto3 and the pod's
    IAM role); stamped with the time it was read, so the catalog-age metric starts at zero."""
    from ..catalog.aws import load_live_catalog

    return lambda: (load_live_catalog(region), None)
