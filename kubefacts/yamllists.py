"""A list over the item limit, refused before anything is built (called by
kubefacts.yamlread.load_documents before either of its readers).

Every event those readers see costs Python about a microsecond: a List of 100,001 pods is 3.1
million events, seconds and hundreds of MiB built before its refusal. A block list's items are
lines that begin `- ` at one column, which the text shows at C speed; what the text does not show
is whether such a line is really an item (it may sit inside a quoted or flow value that spans
lines). So the lines only nominate; the refusal rests on proof, and where a step cannot be proved
this gives up and the readers decide as before (slower, never differently):

- the list starts at the first nominated line (the checked walk over the text before it finds a
  list starting there, with its key path and depth, and refuses nothing before it);
- each item's lines (up to the next nominated line) parse alone with libyaml (`raw_parse`, in C:
  no Python object per event), and every other line of it is more indented, blank or a comment
  at that column: so no quote or bracket stays open into the next item, and each nominated line
  is an item of the same list;
- nothing the checked walk refuses sooner can sit before the item too many: no tag (`!`), alias
  (`*`), explicit or collection key (`?`, `]:`, `}:`), line break other than a line feed, and each
  item has too few events to nest past the depth limit or hold a list or mapping over the limits.
- nothing the scanner reads before the item too many's event lies past the proved items: libyaml
  reads on from a token that could be a simple key (the list's `[`, or an enclosing `[`/`{` or `- [`
  on its line: `[a, b]: c`) until the key is resolved, the line ends or 1,024 characters pass, so
  `[{a: 1}, {a: 1}, {a: 1}, |]` is a syntax error at `|` before it is a list of more than 2 items.
  The items before the item too many end with commas (which settle their own keys), so only an item
  too many on a later line than the list's start, or more than 1,024 characters after it, is refused
  here (every one-line list of 100,000 items is: each item takes at least 2 characters).

The refusal then says what the checked walk says at that item: same line, column, path and words.

A flow list written an item a line (`items: [` then `{...},` lines at one column, or indented JSON)
is proved the same way: its `[` ends the line before the first item, and each item's lines, less
their final comma (outside any comment), parse alone as `- {...}` in block context, where nothing
may follow a flow collection: so each holds exactly one item and leaves no bracket open. A flow
list with several items on a line is proved the same way when the document is JSON (`kubectl get
-o json`, compact or indented): Python's JSON decoder (C) only finds where each item of a top-level
key's array ends; the item's text then faces the same proof as above. Any other flow list (YAML on
one line) has its items nominated by bracket depth, counted with numpy over the text's brackets and
commas (quotes ignored: a bracket or comma in a quoted value nominates wrongly, and the proof fails).
"""
from __future__ import annotations

import bisect
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import yaml

from .yamlwalk import Limits, UnsafeInput, walk_events

_RawParser: Any
try:
    from yaml._yaml import CParser as _RawParser  # raw_parse(): libyaml's events counted in C
except ImportError:  # pragma: no cover - PyYAML built without libyaml: the readers decide alone
    _RawParser = None

_ENTRY = re.compile(r"\n( *)-(?=[ \n])")
_FLOW_ITEM = re.compile(r"\n( *)[\[{]")  # a line that begins a flow collection
_FIRST_ENTRY = re.compile(r"( *)-(?=[ \n])")
_REFUSED_SOONER = ("!", "*", "?", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "]:", "}:")
_COLLECTION_KEY = re.compile(r"[\]}][ \t]+:")  # `[a] : b`; `[a]: b` is in _REFUSED_SOONER
_NOT_AN_ITEM_START = frozenset("\n\t#,]}:?!*%@`")  # a comment, an indicator, or an error at the item
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
# How far libyaml's scanner reads on from a token that could still be a simple key (`[a, b]: c`)
# on the same line before giving the key up (yaml_parser_stale_simple_keys, scanner.c).
_SIMPLE_KEY_REACH = 1024
_json_scan: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the decoder's C scanner: one value at an offset


def _json_value(text: str, pos: int) -> tuple[Any, int]:
    """(value, end offset) of the JSON value at `pos`; ValueError when there is none."""
    try:
        value, end = _json_scan(text, pos)
        return value, end
    except StopIteration:
        raise ValueError(f"no JSON value at offset {pos}") from None


def _mark(text: str, offset: int) -> tuple[int, int]:
    """(line, column) of an offset, both from 0, as libyaml's marks count them."""
    return text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1)


def refuse_long_list(text: str, display: str, limits: Limits) -> None:
    """Raise UnsafeInput when a list provably holds more than `max_items` items: a block list, a
    flow list written an item a line, an array of a JSON document, or any flow list on one line."""
    most = limits.max_items
    if _RawParser is None:
        return
    if text.lstrip(" \t\n\r").startswith("{"):
        _refuse_json_array(text, display, limits)
    if text.count("\n") > most:  # each item begins a line here
        _refuse_by_lines(text, display, limits)
    if text.count(",") > most and text.isascii():  # the layouts above leave only a flow list on few lines
        _refuse_flow_by_brackets(text, display, limits)


def _refuse_by_lines(text: str, display: str, limits: Limits) -> None:
    most = limits.max_items
    if text.count("-") > most:  # each block item needs a `-`
        first = _FIRST_ENTRY.match(text)
        counts = Counter(map(len, _ENTRY.findall(text)))
        if first:
            counts[len(first.group(1))] += 1
        for column in sorted(c for c, n in counts.items() if n >= most + 2):
            if _refuse_at_column(text, display, limits, column,
                                 first is not None and len(first.group(1)) == column):
                break  # one proof attempt per layout: a crafted file cannot make this pass the slow part
    counts = Counter(map(len, _FLOW_ITEM.findall(text)))
    for column in sorted(c for c, n in counts.items() if n >= most + 2):
        if _refuse_flow_at_column(text, display, limits, column):
            return


def _refuse_at_column(text: str, display: str, limits: Limits, column: int, at_start: bool) -> bool:
    """Raise for the first run of items at `column` long enough and proved; True when one was tried."""
    most = limits.max_items
    entries = ([0] if at_start else []) + [
        p + 1 for p in map(re.Match.start, re.finditer(rf"\n {{{column}}}-(?=[ \n])", text))]
    # A line that is neither an item at this column nor more indented ends a run of items (blank
    # lines and comments at the column do not). Each search scans on from where the last ended.
    ends = re.compile(rf"\n(?: {{0,{column - 1}}}[^ \n]| {{{column}}}(?:[^ \n#-]|-[^ \n]))" if column else
                      r"\n(?:[^ \n#-]|-[^ \n])")
    index = 0
    while index + most + 1 < len(entries):
        end = ends.search(text, entries[index], entries[index + most + 1])
        if end is None:
            _refuse_run(text, display, limits, column, entries[index:index + most + 2])
            return True  # not proved: the readers decide
        index = bisect.bisect_left(entries, end.start() + 1)
    return False


def _refuse_run(text: str, display: str, limits: Limits, column: int, items: list[int]) -> None:
    start = items[limits.max_items] + column + 1  # the item too many: where its node starts (after `- `)
    while text[start] == " ":
        start += 1
    # Events of one item alone: stream, document and list start and end (6), or 9 in `x:` at column.
    wrap, framing = ("x:\n", 9) if column else ("", 6)
    wrap_bytes = wrap.encode()
    _prove(text, display, limits, items, start, (_mark(text, items[0])[0], column),
           lambda chunk: (wrap if isinstance(chunk, str) else wrap_bytes) + chunk if wrap else chunk, framing)


def _refuse_flow_at_column(text: str, display: str, limits: Limits, column: int) -> bool:
    """The same for a flow list written an item a line (`items: [` then `{...},` lines, or indented
    JSON): its `[` ends a line and the first item begins the next. True when a proof was tried."""
    most = limits.max_items
    entries = [p + 1 for p in map(re.Match.start, re.finditer(rf"\n {{{column}}}[\[{{]", text))]
    for opening in re.finditer(rf"\[[ \n]*\n {{{column}}}[\[{{]", text):
        index = bisect.bisect_left(entries, opening.end() - 1 - column)
        if index + most + 1 < len(entries) and entries[index] == opening.end() - 1 - column:
            _prove(text, display, limits, entries[index:index + most + 2], entries[index + most] + column,
                   _mark(text, opening.start()), _one_flow_item(column), 6)
            return True
    return False


def _refuse_json_array(text: str, display: str, limits: Limits) -> None:
    """The same for an array under a key of a top-level JSON object (`{"kind": "List", "items": [...]}`,
    on one line or indented): the decoder finds where each item ends; nothing it builds is kept."""
    try:
        bracket, items = _json_array_items(text, limits.max_items + 2)
    except (ValueError, RecursionError):  # not JSON, or nested past the decoder's stack: the readers decide
        return
    if len(items) == limits.max_items + 2:
        _prove(text, display, limits, items, items[limits.max_items], _mark(text, bracket), _flow_item, 6)


def _json_array_items(text: str, wanted: int) -> tuple[int, list[int]]:
    """(offset of `[`, offsets of its first `wanted` items) for the first array under a key of the
    top-level object that has that many; (-1, []) when none has. Raises ValueError on what is not JSON."""
    pos = _skip_blank(text, text.index("{") + 1)
    while text.startswith('"', pos):
        pos = _skip_blank(text, _json_value(text, pos)[1])  # the key
        if not text.startswith(":", pos):
            raise ValueError("no colon after a key")
        pos = _skip_blank(text, pos + 1)
        if text.startswith("[", pos):
            bracket, items = pos, []
            pos = _skip_blank(text, pos + 1)
            while not text.startswith("]", pos):
                items.append(pos)
                if len(items) == wanted:
                    return bracket, items
                pos = _skip_blank(text, _json_value(text, pos)[1])
                if text.startswith(",", pos):
                    pos = _skip_blank(text, pos + 1)
                elif not text.startswith("]", pos):
                    raise ValueError("no comma between items")
            pos += 1
        else:
            pos = _json_value(text, pos)[1]
        pos = _skip_blank(text, pos)
        if not text.startswith(",", pos):
            break
        pos = _skip_blank(text, pos + 1)
    return -1, []


def _refuse_flow_by_brackets(text: str, display: str, limits: Limits) -> None:
    """The same for the first flow sequence (`[...]`) whose own commas number more than the limit:
    items start after its `[` and after each comma whose innermost open bracket is that `[`."""
    import numpy as np  # here only: the readers and most refusals never need it

    most = limits.max_items
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    wanted = np.zeros(256, dtype=bool)
    wanted[list(b"[]{},")] = True  # a table lookup: np.isin sorts the 28 MB first
    marks = np.flatnonzero(wanted[raw])
    chars = raw[marks]
    del raw  # the text's bytes: only the brackets and commas are kept
    opening = (chars == ord("[")) | (chars == ord("{"))
    depth = np.cumsum(opening.astype(np.int32) - ((chars == ord("]")) | (chars == ord("}"))), dtype=np.int32)
    commas = chars == ord(",")
    for level in range(1, min(int(depth.max(initial=0)), limits.max_depth) + 1):
        opens = np.flatnonzero(opening & (depth == level))
        inside = np.flatnonzero(commas & (depth == level))
        if len(inside) <= most or not len(opens):
            continue
        parent = np.searchsorted(opens, inside) - 1
        inside, parent = inside[parent >= 0], parent[parent >= 0]
        counts = np.bincount(parent, minlength=len(opens))
        crowded = np.flatnonzero((counts > most) & (chars[opens] == ord("[")))
        if not len(crowded):
            continue
        bracket = int(marks[opens[crowded[0]]])
        separators = marks[inside[parent == crowded[0]][:most + 1]]
        items = [_skip_blank(text, bracket + 1)] + [_skip_blank(text, int(c) + 1) for c in separators]
        if len(items) == most + 2:
            _prove(text, display, limits, items, items[most], _mark(text, bracket), _flow_collection_item, 6)
        return  # one proof attempt


def _flow_collection_item(chunk: str | bytes) -> str | None:
    """_one_flow_item(0), but only for an item that is a flow collection (`{...}` or `[...]`): its
    inside is flow context wherever it stands, while a scalar or pair alone after `- ` is read in
    block context (`- - x`, `- |`, an empty entry between two commas all parse there, not in the list)."""
    document = _flow_item(chunk)
    return document if document is not None and document[2:].lstrip(" ")[:1] in ("{", "[") else None


def _skip_blank(text: str, pos: int) -> int:
    return _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]  # `*` always matches


def _one_flow_item(column: int) -> Callable[[Any], Any]:
    """An item's lines as `- {...}` in block context, or None unless they end in a comma outside
    any comment: in block context nothing may follow a flow collection, so a second item (`}, {`)
    or a plain scalar after it is a parse error there, while its inside parses as in the list."""
    def alone(chunk: str | bytes) -> str | None:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        text = text.rstrip(" \n")
        if not text.endswith(",") or "#" in text[text.rfind("\n") + 1:]:
            return None
        return "- " + text[column:-1]
    return alone


_flow_item = _one_flow_item(0)  # a flow item that starts its chunk (JSON, one-line lists)


def _prove(text: str, display: str, limits: Limits, items: list[int], start: int, list_mark: tuple[int, int],
           alone: Callable[[Any], Any], framing: int) -> None:
    """Raise the checked walk's refusal at `start` (the item too many) once every step is proved:
    `items` are the nominated item offsets (the limit + 2), `list_mark` where the list starts,
    `alone(chunk)` an item's text as a document of one list with one item (None: not provable),
    `framing` that document's events besides the item's."""
    most = limits.max_items
    # str.find per needle runs at memchr speed; one regex over the whole region is several times slower.
    begin, end = items[0], items[most]
    if any(text.find(needle, begin, end) >= 0 for needle in _REFUSED_SOONER):
        return
    if (text.find(" :", begin, end) >= 0 or text.find("\t:", begin, end) >= 0) and \
            _COLLECTION_KEY.search(text, begin, end):
        return
    if text[start] in _NOT_AN_ITEM_START:
        return
    line, column = _mark(text, start)  # on the line of the item too many: only its `- ` or indent before
    if line == list_mark[0] and column - list_mark[1] <= _SIMPLE_KEY_REACH + 1:
        return  # the scanner may still be reading on from the list's start, past the proved items
    try:
        found = walk_events(text[:items[1]], display, limits, find_list=list_mark)
    except (UnsafeInput, yaml.YAMLError):
        return
    if found is None:
        return
    parent_path, depth, nodes = found
    # An item with at most this many events cannot hold a list or mapping over the limits (that takes
    # the limit + 3 events) nor nest past the depth limit (each collection in it is 2 of its events).
    budget = min(most + 2, 2 * (limits.max_depth - depth))
    nodes_left = limits.max_nodes - nodes
    source: str | bytes = text
    if text.isascii():  # the same offsets, and libyaml reads bytes without an encoding step
        source = text.encode()
    try:
        for begin, end in itertools.pairwise(items):
            document = alone(source[begin:end])
            if document is None:
                return
            events = _RawParser(document).raw_parse() - framing
            if events > budget:
                return
            nodes_left -= events
    except yaml.YAMLError:
        return
    if nodes_left < 0:
        return
    raise UnsafeInput(f"a list of more than {most:,} items; refused", origin=display, line=line + 1,
                      column=column + 1, path=f"{parent_path}[{most}]")
