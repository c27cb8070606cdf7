"""The event walk that bounds a YAML stream before anything is built, and the limits it holds.

`walk_events` reads libyaml's event stream once (no node composed): depth, tags, complex keys,
node count, items per collection and alias expansion, each refused with its line, column and key
path (`UnsafeInput`, a LocatedError). `kubefacts.yamlread` and `kubefacts.yamllists` build on it.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import LocatedError

_Parser: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
try:  # libyaml parses several times faster; its parser is iterative, so the depth check holds
    _Parser = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Parser = yaml.SafeLoader

MiB = 2**20


@dataclass(frozen=True)
class Limits:
    """Bounds for one file. The defaults hold every shipped input with a wide margin."""

    max_bytes: int = 32 * MiB
    """Largest file read; a render of 200 NodePools and 20,000 pods is about 30 MiB."""
    max_depth: int = 64
    """Deepest nesting of mappings and sequences (Kubernetes objects nest about 20 deep)."""
    max_alias_nodes: int = 100_000
    """Nodes aliases may add on top of what is written (anchors for shared blocks stay cheap)."""
    max_nodes: int = 5_000_000
    """Values (scalars, mappings, lists) written in one file; parsing stops there."""
    max_items: int = 100_000
    """Entries of one list or mapping: a List of 200,000 pods is refused as soon as its 100,001st
    item is parsed, instead of after the whole file was built (simulate ties it to --max-pods)."""


DEFAULT_LIMITS = Limits()


class UnsafeInput(LocatedError, ValueError):
    """A refused file: `origin` is the file (and line:column when known), `path` the key path."""

    def __init__(self, message: str, *, origin: str, line: int | None = None, column: int | None = None,
                 path: str = ""):
        path = path if len(path) <= 100 else path[:97] + "..."  # the head says where; 64 levels of [0] do not
        super().__init__(origin, line, column, path, message)
        self.path = path
        self.origin = self.where or origin


# --- YAML --------------------------------------------------------------------------------------

_ALLOWED_TAGS = {None, "!", "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                 "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:map",
                 "tag:yaml.org,2002:seq"}


class _Frame:
    __slots__ = ("anchor", "expect_key", "index", "key", "mapping", "size")

    def __init__(self, mapping: bool, anchor: str | None):
        self.mapping = mapping
        self.index = 0
        self.key: str | None = None
        self.expect_key = mapping
        self.size = 1
        self.anchor = anchor


def _path(stack: list[_Frame]) -> str:
    out = ""
    for frame in stack:
        if frame.mapping:
            if frame.expect_key or frame.key is None:
                continue
            out += f".{frame.key}" if out else frame.key
        else:
            out += f"[{frame.index}]"
    return out


def check_events(text: str, display: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Walk the parser's events once: depth, tags, complex keys, node count and alias expansion,
    with no node composed. Raises UnsafeInput naming line, column and key path."""
    walk_events(text, display, limits)


def walk_events(text: str, display: str, limits: Limits, find_list: tuple[int, int] | None = None,
                find_key: tuple[int, int] | None = None) -> Any:
    """check_events' walk. With `find_list` (0-based line, column) it stops at the block list that
    starts there and returns (key path of its parent, stack depth with the list, values so far);
    with `find_key`, at the mapping key written there, and returns its key path."""
    loader = _Parser(text)
    stack: list[_Frame] = []
    sizes: dict[str, int] = {}
    open_anchors: set[str] = set()
    expanded = nodes = 0
    key_anchor = None
    max_depth, max_alias, max_nodes, max_items = limits.max_depth, limits.max_alias_nodes, limits.max_nodes, limits.max_items
    scalar_t, alias_t = yaml.ScalarEvent, yaml.AliasEvent
    starts = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)

    def refuse(message: str, event: Any) -> UnsafeInput:
        mark = event.start_mark
        return UnsafeInput(message, origin=display, line=mark.line + 1, column=mark.column + 1, path=_path(stack))

    try:
        events: Iterator[Any] = iter(loader.get_event, None)  # the C parser's events (untyped in the stubs)
        for event in events:
            kind = type(event)
            if kind is scalar_t or kind is alias_t or kind in starts:
                tag = getattr(event, "tag", None)
                if tag not in _ALLOWED_TAGS:
                    raise refuse(f"tag {tag!r} is not allowed (only strings, numbers, booleans, null, "
                                 f"mappings and lists)", event)
                top = stack[-1] if stack else None
                key_position = top is not None and top.mapping and top.expect_key
                if kind in starts:
                    if key_position:
                        raise refuse("a key must be a string, not a mapping or list", event)
                    if len(stack) >= max_depth:
                        raise refuse(f"nested deeper than {max_depth} levels; refused", event)
                    if top is not None and not top.mapping and top.index >= max_items:
                        raise refuse(f"a list of more than {max_items:,} items; refused", event)
                    nodes += 1
                    if event.anchor:
                        open_anchors.add(event.anchor)
                    if find_list is not None and kind is yaml.SequenceStartEvent and \
                            (event.start_mark.line, event.start_mark.column) == find_list:
                        return _path(stack), len(stack) + 1, nodes
                    stack.append(_Frame(kind is yaml.MappingStartEvent, event.anchor))
                    continue
                if find_key is not None:
                    here = (event.start_mark.line, event.start_mark.column) == find_key
                    if here and not key_position and event.anchor:  # the key is an alias to this value
                        key_anchor = event.anchor
                    elif here or (key_position and kind is alias_t and event.anchor == key_anchor):
                        head = _path(stack)
                        key = event.value if kind is scalar_t else f"*{event.anchor}"
                        return f"{head}.{key}" if head else key
                if kind is scalar_t:
                    size = 1
                    nodes += 1
                    if event.anchor:
                        sizes[event.anchor] = 1
                else:
                    anchor = event.anchor
                    if anchor in open_anchors:
                        raise refuse(f"alias *{anchor} refers to a collection that contains it (a cycle)", event)
                    if anchor not in sizes:
                        raise refuse(f"alias *{anchor} has no anchor before it", event)
                    size = sizes[anchor]
                    if key_position and size > 1:
                        raise refuse("a key must be a string, not a mapping or list", event)
                    expanded += size
                    if expanded > max_alias:
                        raise refuse(f"aliases expand to more than {max_alias:,} nodes (an alias bomb?); refused", event)
                if nodes > max_nodes:
                    raise refuse(f"more than {max_nodes:,} values in one file; refused", event)
                if top is not None:
                    if not top.mapping and top.index >= max_items:  # at the start of the item too many
                        raise refuse(f"a list of more than {max_items:,} items; refused", event)
                    top.size += size
                    top.index += 1
                    if top.mapping:
                        top.key = event.value if key_position and kind is scalar_t else None
                        top.expect_key = not top.expect_key
                        if top.index > 2 * max_items:
                            raise refuse(f"a mapping of more than {max_items:,} keys; refused", event)
            elif kind in ends:
                frame = stack.pop()
                if frame.anchor:
                    open_anchors.discard(frame.anchor)
                    sizes[frame.anchor] = frame.size
                if nodes > max_nodes:
                    raise refuse(f"more than {max_nodes:,} values in one file; refused", event)
                if stack:
                    top = stack[-1]
                    top.size += frame.size
                    top.index += 1
                    if top.mapping:
                        top.key = None
                        top.expect_key = not top.expect_key
                        if top.index > 2 * max_items:
                            raise refuse(f"a mapping of more than {max_items:,} keys; refused", event)
            elif kind is yaml.DocumentStartEvent:
                sizes.clear()
    finally:
        loader.dispose()
    return None

