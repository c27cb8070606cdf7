"""A block list over the item limit, refused before anything is built (called by
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
_FIRST_ENTRY = re.compile(r"( *)-(?=[ \n])")
_REFUSED_SOONER = ("!", "*", "?", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "]:", "}:")
_COLLECTION_KEY = re.compile(r"[\]}][ \t]+:")  # `[a] : b`; `[a]: b` is in _REFUSED_SOONER
_NOT_AN_ITEM_START = frozenset("\n\t#,]}:?!*%@`")  # a comment, an indicator, or an error at the item


def refuse_long_block_list(text: str, display: str, limits: Limits) -> None:
    """Raise UnsafeInput when a block list provably holds more than `max_items` items."""
    most = limits.max_items
    if _RawParser is None or text.count("-") <= most:  # each block item needs a `-`
        return
    first = _FIRST_ENTRY.match(text)
    counts = Counter(map(len, _ENTRY.findall(text)))
    if first:
        counts[len(first.group(1))] += 1
    for column in sorted(c for c, n in counts.items() if n >= most + 2):
        if _refuse_at_column(text, display, limits, column, first is not None and len(first.group(1)) == column):
            return  # one proof attempt per file: a crafted file cannot make this pass the slow part


def _refuse_at_column(text: str, display: str, limits: Limits, column: int, at_start: bool) -> bool:
    """Raise for the first run of items at `column` long enough and proved; True when one was tried."""
    most = limits.max_items
    entries = ([0] if at_start else []) + [m.start() + 1 for m in re.finditer(rf"\n {{{column}}}-(?=[ \n])", text)]
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
    most = limits.max_items
    # str.find per needle runs at memchr speed; one regex over the whole region is several times slower.
    begin, end = items[0], items[most]
    if any(text.find(needle, begin, end) >= 0 for needle in _REFUSED_SOONER):
        return
    if (text.find(" :", begin, end) >= 0 or text.find("\t:", begin, end) >= 0) and \
            _COLLECTION_KEY.search(text, begin, end):
        return
    start = items[most] + column + 1  # the item too many: where its node starts (after `- `)
    while text[start] == " ":
        start += 1
    if text[start] in _NOT_AN_ITEM_START:
        return
    line = text.count("\n", 0, items[0])
    try:
        found = walk_events(text[:items[1]], display, limits, find_list=(line, column))
    except (UnsafeInput, yaml.YAMLError):
        return
    if found is None:
        return
    parent_path, depth, nodes = found
    # Events of one item alone: stream, document and list start and end (6), or 9 in `x:` at column.
    wrap, framing = ("x:\n", 9) if column else ("", 6)
    budget = min(most, 2 * (limits.max_depth - depth))  # collections in an item <= its events / 2
    nodes_left = limits.max_nodes - nodes
    source: str | bytes = text
    if text.isascii():  # the same offsets, and libyaml reads bytes without an encoding step
        source, wrap = text.encode(), wrap.encode()
    try:
        for begin, end in zip(items, items[1:]):
            events = _RawParser(wrap + source[begin:end] if wrap else source[begin:end]).raw_parse() - framing
            if events > budget:
                return
            nodes_left -= events
    except yaml.YAMLError:
        return
    if nodes_left < 0:
        return
    where = text.count("\n", 0, items[most])
    raise UnsafeInput(f"a list of more than {most:,} items; refused", origin=display, line=where + 1,
                      column=start - items[most] + 1, path=f"{parent_path}[{most}]")
