"""List-then-watch for one kind, the way client-go's reflector does it, feeding a sink.

The sink gets `Replace` after every full list (the whole current set) and `Change` for every
watch event. A 410 (watch or continue token too old) means "list again"; any other error
backs off and retries the same step. Nothing here interprets objects.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from .batcher import Backoff
from .kinds import Kind
from .kube import ApiError, Gone, KubeApi

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Replace:
    kind: Kind
    items: list
    resource_version: str


@dataclass(frozen=True)
class Change:
    kind: Kind
    type: str  # ADDED | MODIFIED | DELETED
    object: object


@dataclass(frozen=True)
class Failure:
    """Reported so the controller can count it; the reflector itself retries."""

    kind: Kind
    operation: str  # list | watch
    status: int
    message: str


Message = Replace | Change | Failure


class RunawayList(ApiError):
    """A paged list that does not end (a continue token seen before, or more pages or items than
    any cluster holds): dropped, reported, and retried after a backoff."""

    def __init__(self, message: str):
        super().__init__(0, message)


class NoResourceVersion(ApiError):
    """A list without `metadata.resourceVersion`: there is nothing to watch from."""

    def __init__(self, message: str):
        super().__init__(0, message)


# A page ceiling and an item ceiling well above the largest clusters (150,000 pods, 5,000 nodes):
# past them the list is a server or proxy fault, and the advisor must not grow until it is killed.
MAX_PAGES = 1000
MAX_ITEMS = 300_000


class Reflector:
    def __init__(self, kind: Kind, api: KubeApi, sink: Callable[[Message], None], *, page_size: int = 500,
                 watch_timeout: int = 300, backoff: Backoff | None = None, quiet_pause: float = 1.0,
                 absent_pause: float = 300.0, max_pages: int = MAX_PAGES, max_items: int = MAX_ITEMS):
        self.kind = kind
        self.api = api
        self.sink = sink
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff(jitter=0.5)
        self.quiet_pause = quiet_pause
        self.absent_pause = absent_pause
        self.max_pages = max_pages
        self.max_items = max_items
        self.resource_version: str | None = None  # None: the next step lists

    def list_all(self) -> None:
        """Every page of a consistent list, then one Replace. A 410 on a continue token (the
        snapshot expired mid-way) starts over on the next step. As client-go's pager
        (k8s.io/client-go/tools/pager/pager.go) follows `continue` until it is empty; unlike it,
        a token that comes back or a list past the page or item ceiling is RunawayList (the
        pages read so far are dropped), and a list without a resourceVersion is
        NoResourceVersion after its Replace (the objects are usable, but there is nothing to
        watch from: listing again at once would spin)."""
        items: list = []
        token: str | None = None
        seen: set[str] = set()
        pages = 0
        while True:
            page = self.api.list(self.kind, limit=self.page_size, continue_token=token)
            pages += 1
            page_items = page.get("items") if isinstance(page, dict) else None
            items.extend(page_items if isinstance(page_items, list) else [])
            page_meta = page.get("metadata") if isinstance(page, dict) else None
            meta = page_meta if isinstance(page_meta, dict) else {}
            token = meta.get("continue") or None
            if token is None:
                version = str(meta.get("resourceVersion") or "")
                break
            token = str(token)
            if token in seen:
                raise RunawayList(f"continue token {token[:40]!r} came back after {pages} pages: the list never ends")
            if pages >= self.max_pages or len(items) > self.max_items:
                raise RunawayList(f"still paging after {pages} pages and {len(items)} items "
                                  f"(ceilings {self.max_pages} pages, {self.max_items} items)")
            seen.add(token)
        self.sink(Replace(self.kind, items, version))
        self.resource_version = version or None
        if not version:
            raise NoResourceVersion("the list carried no metadata.resourceVersion; nothing to watch from")

    def watch_once(self) -> int:
        """One watch stream from the last seen resourceVersion until the server closes it;
        the number of events it carried."""
        assert self.resource_version is not None
        seen = 0
        for event in self.api.watch(self.kind, resource_version=self.resource_version,
                                    timeout_seconds=self.watch_timeout):
            event_type = event.get("type") if isinstance(event, dict) else None
            obj = event.get("object") if isinstance(event, dict) else None
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            version = meta.get("resourceVersion") if isinstance(meta, dict) else None
            if event_type in ("ADDED", "MODIFIED", "DELETED"):
                self.sink(Change(self.kind, event_type, obj))
            elif event_type != "BOOKMARK":
                # Unknown event types are reported as malformed by the controller, not here.
                self.sink(Change(self.kind, str(event_type), obj))
            if isinstance(version, str) and version:
                self.resource_version = version
            seen += 1
        return seen

    def step(self) -> float:
        """List or watch once; the seconds to wait before the next step (0 after a success)."""
        operation = "list" if self.resource_version is None else "watch"
        seen = 1
        try:
            if operation == "list":
                self.list_all()
            else:
                seen = self.watch_once()
        except Gone as exc:
            log.info("%s %s expired (%s); listing again", self.kind.kind, operation, exc)
            self.sink(Failure(self.kind, operation, 410, str(exc)))
            self.resource_version = None
            return 0.0
        except ApiError as exc:
            if exc.status == 404 and operation == "list" and self.kind.optional:
                # Not served here: plan without any, and look again now and then (a CRD may come).
                log.info("%s is not served (%s); planning without it", self.kind.kind, exc)
                self.sink(Replace(self.kind, [], ""))
                return self.absent_pause
            delay = self.backoff.failure()
            log.warning("%s %s failed (%s); retrying in %.0fs", self.kind.kind, operation, exc, delay)
            self.sink(Failure(self.kind, operation, exc.status, str(exc)))
            return delay
        self.backoff.success()
        # A server (or proxy) that closes every watch at once, without even a bookmark, must
        # not turn this loop into a busy one.
        return 0.0 if seen else self.quiet_pause

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            delay = self.step()
            if delay:
                stop.wait(delay)
