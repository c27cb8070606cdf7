"""The one bounded way in for every YAML or JSON file the program reads.

Stack and team files, manifests for `simulate`, build folders for the policy check: all go
through here, so a hostile or careless file is refused with its file, line and key path before
anything is built from it:

- size: at most `Limits.max_bytes` are read (a special file or a huge render cannot exhaust memory);
- text: UTF-8 (a UTF-8 BOM is dropped); UTF-16/32 only when marked by a BOM (as YAML 1.2 allows);
  anything else, or text with NUL bytes (binary), is refused with the offending offset;
- nesting depth: checked on the parser's event stream, before any node is composed, so a
  100,000-deep document can neither overflow the C composer's stack nor Python's recursion;
- aliases: every node an alias would materialise is counted as it is parsed; a "billion laughs"
  document is refused at once, even when the bomb sits under a key nothing reads; an alias to a
  collection still being parsed (a cycle) is refused;
- tags: only the JSON-compatible core tags; `!!set`, `!!binary`, `!!python/...` are refused;
- items: a list or mapping of more than `Limits.max_items` entries is refused at the entry too many;
  a list over it is refused before anything is built where its items can be found and proved in C
  (kubefacts.yamllists: block lists, flow lists, JSON arrays);
- keys: duplicate keys are refused (PyYAML would keep the last silently), and keys must be strings
  (a number, boolean or null key is refused with its key path);
- values: unquoted dates stay the text written (`2024-01-01`), never a `datetime` that JSON cannot hold;
  `.nan`/`.inf` are refused.

Limits are deliberate and documented (README "Input limits"); callers may raise them.
"""
from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from .yamllists import refuse_long_list
from .yamlwalk import DEFAULT_LIMITS, Limits, MiB, UnsafeInput, _Parser, check_events, walk_events


@dataclass(frozen=True)
class Document:
    value: Any
    line: int
    """1-based line where the document starts."""


# --- bytes and text ----------------------------------------------------------------------------

def read_bytes(path: Any, display: str | None = None, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """At most `max_bytes` of a regular file; a folder, a missing or a larger file is refused."""
    display = display or str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limits.max_bytes + 1)
    except FileNotFoundError:
        raise UnsafeInput("file not found", origin=display) from None
    except IsADirectoryError:
        raise UnsafeInput("is a folder, not a file", origin=display) from None
    except OSError as exc:
        raise UnsafeInput(f"cannot read: {exc.strerror or exc}", origin=display) from None
    if len(data) > limits.max_bytes:
        raise UnsafeInput(f"larger than {limits.max_bytes // MiB} MiB; refused", origin=display)
    return data


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode(data: bytes, display: str) -> str:
    """Text of a file: UTF-8, or UTF-16/32 marked by a byte-order mark; binary is refused."""
    encoding, body = "utf-8", data
    for bom, name in _BOMS:  # UTF-32 LE first: its BOM starts with UTF-16 LE's
        if data.startswith(bom):
            encoding, body = name, data[len(bom):]
            break
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        hint = "" if encoding != "utf-8" else " (save it as UTF-8; UTF-16/32 need a byte-order mark)"
        raise UnsafeInput(f"not {encoding.upper()} text: byte {body[exc.start:exc.start + 1]!r} "
                          f"at offset {exc.start}{hint}", origin=display) from None
    if "\x00" in text:
        if encoding == "utf-8" and body[1::2].count(0) > len(body) // 4:
            raise UnsafeInput("looks like UTF-16 without a byte-order mark; save it as UTF-8", origin=display)
        raise UnsafeInput(f"binary content (NUL character at offset {text.index(chr(0))}); expected text",
                          origin=display)
    return text


def read_text(path: Any, display: str | None = None, limits: Limits = DEFAULT_LIMITS) -> str:
    display = display or str(path)
    return decode(read_bytes(path, display, limits), display)



def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    # An unquoted date is still the text the user wrote; JSON (and the Pulumi CLI) keep it a string.
    return loader.construct_scalar(node)


def _finite_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    if not math.isfinite(value):
        raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a finite number", node.start_mark)
    return value


class _KeyNotText(yaml.constructor.ConstructorError):
    """A mapping key that is a number, boolean or null: found while building, its key path after."""


def _unique_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    if not isinstance(node, yaml.MappingNode):  # `!!map [a]`: refused, not a TypeError
        raise yaml.constructor.ConstructorError(None, None, f"expected a mapping, but found {node.id}",
                                                node.start_mark)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *base` keys may be overridden by the mapping's own keys
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        if not isinstance(key, str):
            raise _KeyNotText(None, None, f"key {key_node.value!r} must be a string (quote it: \"{key_node.value}\")",
                              key_node.start_mark)
        seen.add(key)
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep)
    return mapping


def _yaml_map(loader: Any, node: yaml.MappingNode) -> Iterator[dict[str, Any]]:
    data: dict[str, Any] = {}
    yield data
    data.update(_unique_mapping(loader, node))


class _Constructor(_Parser):  # type: ignore[valid-type, misc]  # the parser class is chosen at import
    """Safe construction with the rules above; events were checked first."""


_Constructor.add_constructor("tag:yaml.org,2002:map", _yaml_map)
_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
_Constructor.add_constructor("tag:yaml.org,2002:float", _finite_float)
# YAML 1.1 resolves a bare `=` to the `value` tag, which PyYAML cannot construct; kubectl (go-yaml)
# reads it as the string "=" (e.g. a toleration or label value).
_Constructor.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def _yaml_error(err: yaml.YAMLError, display: str) -> UnsafeInput:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or getattr(err, "context", None) or str(err)
    if mark is None:
        return UnsafeInput(f"malformed YAML: {problem}", origin=display)
    return UnsafeInput(f"malformed YAML: {problem}", origin=display, line=mark.line + 1, column=mark.column + 1)


_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                          "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"})
_UNSET = object()


def _load_plain(text: str, limits: Limits) -> list[Document] | None:
    """One pass over the parser's events that builds the documents of an ordinary stream: anchors
    and aliases within the limits, no explicit tag or merge key, no duplicate or non-string key.

    On anything else (including any error) it gives up and returns None, and the checked two-pass
    path below decides, with its messages; so whatever this returns is what that path returns. It
    keeps every bound of `check_events` (a collection deeper than the limit is never opened, alias
    expansion is counted the same way) and builds each value once, straight from the events,
    instead of composing a node graph and then constructing it (about twice as fast).
    """
    loader = _Constructor(text)
    resolve, constructors, scalar_node = loader.resolve, loader.yaml_constructors, yaml.ScalarNode
    scalar_t, alias_t, mapping_t, sequence_t = yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, \
        yaml.SequenceStartEvent
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    max_depth, max_nodes, max_items, max_alias = limits.max_depth, limits.max_nodes, limits.max_items, \
        limits.max_alias_nodes
    docs: list[Document] = []
    # open collections: [container, is mapping, pending key (or _UNSET), children, size, anchor]
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[Any, int]] = {}  # anchor -> (value, size) of the current document
    open_anchors: set[str] = set()
    nodes = expanded = line = 0
    tags: dict[str, str] = {}  # plain scalar text -> resolved tag
    if loader.yaml_path_resolvers:  # pragma: no cover - SafeLoader has none
        return None
    try:
        events: Iterator[Any] = iter(loader.get_event, None)  # the C parser's events (untyped in the stubs)
        for event in events:
            kind = type(event)
            if kind is scalar_t:
                if event.tag is not None:
                    return None
                value = event.value
                if event.implicit[0]:
                    tag = tags.get(value)
                    if tag is None:  # a plain scalar's tag depends on its text only (no path resolvers)
                        tag = tags[value] = resolve(scalar_node, value, event.implicit)
                    if tag != _STR:
                        if tag not in _SCALAR_TAGS:
                            return None  # a merge key, or a tag this path does not build
                        value = constructors[tag](loader, scalar_node(tag, value, event.start_mark, event.end_mark))
                size = 1
                nodes += 1
                if nodes > max_nodes:
                    return None
                anchor = event.anchor
                if anchor is not None:
                    if anchor in anchors or anchor in open_anchors:
                        return None
                    anchors[anchor] = (value, 1)
            elif kind is mapping_t or kind is sequence_t:
                anchor = event.anchor
                if event.tag is not None or len(stack) >= max_depth:
                    return None
                if stack and stack[-1][1] and stack[-1][2] is _UNSET:
                    return None  # a mapping or list as a key
                nodes += 1
                if nodes > max_nodes:
                    return None
                if anchor is not None:
                    if anchor in anchors or anchor in open_anchors:
                        return None
                    open_anchors.add(anchor)
                if stack and not stack[-1][1] and stack[-1][3] >= max_items:
                    raise _ListTooLong(event, _plain_path(stack))
                if not stack:
                    line = event.start_mark.line + 1
                stack.append([{} if kind is mapping_t else [], kind is mapping_t, _UNSET, 0, 1, anchor])
                continue
            elif kind in ends:
                value, _, _, _, size, anchor = stack.pop()
                if anchor is not None:
                    open_anchors.discard(anchor)
                    anchors[anchor] = (value, size)
                if nodes > max_nodes:
                    return None
            elif kind is alias_t:
                found = anchors.get(event.anchor)
                if found is None:
                    return None  # unknown, or a cycle
                value, size = found
                expanded += size
                if expanded > max_alias:
                    return None
                if nodes > max_nodes:
                    return None
            elif kind is yaml.DocumentStartEvent:
                anchors.clear()
                continue
            else:  # stream start and end, document end
                continue
            if not stack:
                if kind is not mapping_t and kind not in ends:
                    line = event.start_mark.line + 1
                docs.append(Document(value, line))
                continue
            top = stack[-1]
            if not top[1] and top[3] >= max_items:
                # Refused here, as check_events words it (at the item too many; a collection
                # item at its start, above): handing a 100,000-item list to the checked path
                # would parse it all a second time.
                raise _ListTooLong(event, _plain_path(stack))
            top[3] += 1
            top[4] += size
            if top[1]:
                if top[3] > 2 * max_items:
                    return None
                if top[2] is _UNSET:
                    if type(value) is not str or value in top[0]:
                        return None  # a non-string or duplicate key: the checked path says which
                    top[2] = value
                else:
                    top[0][top[2]] = value
                    top[2] = _UNSET
            else:
                top[0].append(value)
    except _ListTooLong:
        raise
    except Exception:
        return None
    finally:
        loader.dispose()
    return docs


class _ListTooLong(Exception):
    def __init__(self, event: Any, path: str):
        super().__init__(path)
        self.event, self.path = event, path


def _plain_path(stack: list[list[Any]]) -> str:
    """The key path of the one-pass reader's open collections, as `_path` writes check_events'."""
    out = ""
    for _container, mapping, key, children, _size, _anchor in stack:
        if mapping:
            if key is not _UNSET:
                out += f".{key}" if out else str(key)
        else:
            out += f"[{children}]"
    return out


def load_documents(text: str, display: str, limits: Limits = DEFAULT_LIMITS) -> list[Document]:
    """Every document of a YAML stream, checked first, then built."""
    refuse_long_list(text, display, limits)
    try:
        docs = _load_plain(text, limits)
    except _ListTooLong as err:
        mark = err.event.start_mark
        raise UnsafeInput(f"a list of more than {limits.max_items:,} items; refused", origin=display,
                          line=mark.line + 1, column=mark.column + 1, path=err.path) from None
    return docs if docs is not None else _load_checked(text, display, limits)


def _load_checked(text: str, display: str, limits: Limits = DEFAULT_LIMITS) -> list[Document]:
    """The events checked first (`check_events`), then composed and constructed by PyYAML."""
    try:
        check_events(text, display, limits)
        loader = _Constructor(text)
        docs = []
        try:
            while loader.check_node():
                node = loader.get_node()
                assert node is not None  # check_node() said there is one
                docs.append(Document(loader.construct_document(node), node.start_mark.line + 1))
        finally:
            loader.dispose()
    except _KeyNotText as err:  # the constructor knows no key path: one more walk finds it
        mark = err.problem_mark
        assert mark is not None  # _unique_mapping raises it with the key's mark
        try:
            path = walk_events(text, display, limits, find_key=(mark.line, mark.column)) or ""
        except (UnsafeInput, yaml.YAMLError):  # pragma: no cover - the same text passed the walk before
            path = ""
        raise UnsafeInput(f"malformed YAML: {err.problem}", origin=display, line=mark.line + 1,
                          column=mark.column + 1, path=path) from None
    except yaml.YAMLError as err:
        raise _yaml_error(err, display) from None
    except UnsafeInput:
        raise
    except ValueError as err:  # Python refuses integers of more than 4,300 digits
        raise UnsafeInput(f"unreadable value ({str(err).split(':')[0]})", origin=display) from None
    return docs


def load_yaml_file(path: Any, display: str | None = None, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The single document of a YAML file (None when empty); more than one is refused."""
    display = display or str(path)
    docs = load_documents(read_text(path, display, limits), display, limits)
    if len(docs) > 1:
        raise UnsafeInput(f"holds {len(docs)} YAML documents; expected one", origin=display, line=docs[1].line)
    return docs[0].value if docs else None


def load_yaml_files(path: Any, display: str | None = None, limits: Limits = DEFAULT_LIMITS) -> list[Document]:
    display = display or str(path)
    return load_documents(read_text(path, display, limits), display, limits)


# --- JSON --------------------------------------------------------------------------------------

def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


def _depth_path(value: Any, limits: Limits) -> str | None:
    """The path of the first value nested deeper than the limit (iterative: no recursion)."""
    todo = [(value, 0, "")]
    while todo:
        item, depth, path = todo.pop()
        if isinstance(item, (dict, list)):
            if depth >= limits.max_depth:
                return path or "(top)"
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(child, (dict, list)):
                    sub = f"{path}[{key}]" if isinstance(item, list) else (f"{path}.{key}" if path else str(key))
                    todo.append((child, depth + 1, sub))
    return None


def load_json_text(text: str, display: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant,
                           parse_float=_finite)
    except RecursionError:
        raise UnsafeInput(f"nested deeper than {limits.max_depth} levels; refused", origin=display) from None
    except json.JSONDecodeError as err:
        raise UnsafeInput(f"malformed JSON: {err.msg}", origin=display, line=err.lineno, column=err.colno) from None
    except ValueError as err:
        raise UnsafeInput(f"malformed JSON: {err}", origin=display) from None
    where = _depth_path(value, limits)
    if where is not None:
        raise UnsafeInput(f"nested deeper than {limits.max_depth} levels; refused", origin=display, path=where)
    return value


def load_json_file(path: Any, display: str | None = None, limits: Limits = DEFAULT_LIMITS) -> Any:
    display = display or str(path)
    return load_json_text(read_text(path, display, limits), display, limits)


__all__ = ["DEFAULT_LIMITS", "Document", "Limits", "UnsafeInput", "check_events", "decode", "load_documents",
           "load_json_file", "load_json_text", "load_yaml_file", "load_yaml_files", "read_bytes", "read_text"]
