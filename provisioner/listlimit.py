"""A list over the item limit, refused before anything is built (called by
provisioner.safeyaml.load_documents before either of its readers).

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

The refusal then says what the checked walk says at that item: same line, column, path and words.

A flow list written an item a line (`items: [` then `{...},` lines at one column, or indented JSON)
is proved the same way: its `[` ends the line before the first item, and each item's lines, less
their final comma (outside any comment), parse alone as `- {...}` in block context, where nothing
may follow a flow collection: so each holds exactly one item and leaves no bracket open. A flow
list with several items on a line is left to the readers.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter

import yaml

from .safeyaml import Limits, UnsafeInput, walk_events

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


def refuse_long_list(text: str, display: str, limits: Limits) -> None:
    """Raise UnsafeInput when a list provably holds more than `max_items` items: a block list, or
    a flow list written an item a line."""
    most = limits.max_items
    if _RawParser is None or text.count("\n") <= most:  # each item begins a line here
        return
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
    _prove(text, display, limits, items, start, (text.count("\n", 0, items[0]), column),
           lambda chunk: (wrap if isinstance(chunk, str) else wrap_bytes) + chunk if wrap else chunk, framing)


def _refuse_flow_at_column(text: str, display: str, limits: Limits, column: int) -> bool:
    """The same for a flow list written an item a line (`items: [` then `{...},` lines, or indented
    JSON): its `[` ends a line and the first item begins the next. True when a proof was tried."""
    most = limits.max_items
    entries = [p + 1 for p in map(re.Match.start, re.finditer(rf"\n {{{column}}}[\[{{]", text))]
    for opening in re.finditer(rf"\[[ \n]*\n {{{column}}}[\[{{]", text):
        index = bisect.bisect_left(entries, opening.end() - 1 - column)
        if index + most + 1 < len(entries) and entries[index] == opening.end() - 1 - column:
            bracket = opening.start()
            _prove(text, display, limits, entries[index:index + most + 2], entries[index + most] + column,
                   (text.count("\n", 0, bracket), bracket - (text.rfind("\n", 0, bracket) + 1)),
                   _one_flow_item(column), 6)
            return True
    return False


def _one_flow_item(column: int):
    """An item's lines as `- {...}` in block context, or None unless they end in a comma outside
    any comment: in block context nothing may follow a flow collection, so a second item (`}, {`)
    or a plain scalar after it is a parse error there, while its inside parses as in the list."""
    def alone(chunk):
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        text = text.rstrip(" \n")
        if not text.endswith(",") or "#" in text[text.rfind("\n") + 1:]:
            return None
        return "- " + text[column:-1]
    return alone


def _prove(text: str, display: str, limits: Limits, items: list[int], start: int, list_mark: tuple[int, int],
           alone, framing: int) -> None:
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
        for begin, end in zip(items, items[1:]):
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
    where = text.count("\n", 0, items[most])
    raise UnsafeInput(f"a list of more than {most:,} items; refused", origin=display, line=where + 1,
                      column=start - (text.rfind("\n", 0, start) + 1) + 1, path=f"{parent_path}[{most}]")
