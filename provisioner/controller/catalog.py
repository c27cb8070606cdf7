"""Which instance-type catalog the advisor plans with: live from AWS when its IAM role allows,
else the one bundled in the image. The choice is visible as a metric, never silent."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)

Loader = Callable[[], tuple[Any, "float | None"]]  # -> (catalog, as_of Unix time or None)


@dataclass(frozen=True)
class CatalogChoice:
    catalog: Any
    source: str  # live | bundled
    as_of: float | None  # when its facts were current (for the catalog-age metric)
    error: str | None = None  # why the live catalog was not used


def choose_catalog(load_live: Loader | None, load_bundled: Loader, now: float) -> CatalogChoice:
    """The live catalog if `load_live` succeeds, else the bundled one with the reason.

    Any exception counts as "not allowed or not reachable" (AccessDenied, no credentials, no
    network, throttling): the advisor must run on the bundled catalog rather than not at all.
    """
    error = "live catalog disabled"
    if load_live is not None:
        try:
            catalog, as_of = load_live()
            return CatalogChoice(catalog, "live", as_of if as_of is not None else now)
        except Exception as exc:  # noqa: BLE001 - see docstring
            error = f"{type(exc).__name__}: {exc}"
            log.warning("live catalog unavailable, using the bundled one: %s", error)
    catalog, as_of = load_bundled()
    return CatalogChoice(catalog, "bundled", as_of, error)


class CatalogHolder:
    """The current choice, swapped atomically by a refresh (plans read it from another thread)."""

    def __init__(self, load_live: Loader | None, load_bundled: Loader, on_change: Callable[[CatalogChoice], None]):
        self.load_live = load_live
        self.load_bundled = load_bundled
        self.on_change = on_change
        self._lock = threading.Lock()
        self._current: CatalogChoice | None = None

    def start(self, now: float) -> CatalogChoice:
        """The bundled catalog at once (it loads in well under a second), so the advisor serves
        and plans from the start; the live one replaces it when `refresh` gets it."""
        return self._set(choose_catalog(None, self.load_bundled, now))

    def _set(self, choice: CatalogChoice) -> CatalogChoice:
        with self._lock:
            self._current = choice
        self.on_change(choice)
        return choice

    def refresh(self, now: float) -> CatalogChoice:
        current = self.current
        if current is not None and current.source == "live" and self.load_live is not None:
            # Keep the last good live catalog if a refresh fails: it is still fresher than the bundle.
            try:
                catalog, as_of = self.load_live()
                choice = CatalogChoice(catalog, "live", as_of if as_of is not None else now)
            except Exception as exc:  # noqa: BLE001
                log.warning("live catalog refresh failed, keeping the previous one: %s", exc)
                return current
        else:
            choice = choose_catalog(self.load_live, self.load_bundled, now)
        return self._set(choice)

    @property
    def current(self) -> CatalogChoice | None:
        with self._lock:
            return self._current

    def run(self, stop: threading.Event, interval: float, clock: Callable[[], float]) -> None:
        """Try the live catalog now, then every `interval` seconds."""
        while not stop.is_set():
            self.refresh(clock())
            stop.wait(interval)
