"""A list over the item limit is refused before anything is built (kubefacts.yamllists
`refuse_long_list`): at C speed, with exactly the checked reader's words, and only when
the checked reader refuses too."""
from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings, strategies as st

from kubefacts import yamlread as safeyaml
from kubefacts.yamllists import refuse_long_list
from kubefacts.yamlread import Limits, UnsafeInput, _load_checked, load_documents
from tests.hostile.corpus import block_pod_list, flow_pod_list, json_pod_list, one_line_flow_pod_list, pod_list

# Items as written at column 0; several are built to fool a line-based count (a quoted or flow
# value spanning lines whose next line starts `- `), others to hit a rule the checked reader
# applies sooner (tags, aliases, collection keys, depth, syntax errors).
ITEMS = (
    "- a\n", "-\n", "- 'it''s'\n", "- {name: p1, spec: {x: [1, 2]}}\n", "- a: 1\n  b: [x]\n",
    "- - x\n  - y\n", "- |\n  text\n  - more\n", "- # note\n  x\n", "# between\n- b\n", "- a\n\n",
    "-   spaced\n", "- x\n  continued\n", "- &k v\n", "- [[[[[[[[x]]]]]]]]\n",
    '- "two\n- lines"\n', "- 'two\n- lines'\n", "- [a\n- b]\n", "- {a: 1,\n- b: 2}\n", "- [a,\n- b]\n",
    "- !!str 5\n", "- *k\n", "- [a]: b\n", "- {a: 1} : b\n", "- ? a\n  : b\n", "- @bad\n",
    "- a: b: c\n", '- "open\n', "- a\r\n", "- ]\n", "- a\n  -\n", "--- \n", "... \n", "- -1\n", "- >\n  f\n",
)


def _document(items: list[str], column: int, shape: str) -> str:
    body = "".join(items)
    if column:
        body = "".join(" " * column + line if line.strip() else line for line in body.splitlines(True))
    head = {"top": "", "key": "kind: List\nitems:\n", "nested": "spec:\n  list:\n"}[shape]
    return head + body


PLAIN = ("- a\n", "- {name: p1}\n", "- [x]\n", "- 'q'\n")  # half the draws: the fast path's own shapes
DOCS = st.builds(_document, st.lists(st.sampled_from(PLAIN) | st.sampled_from(ITEMS), min_size=1, max_size=9),
                 st.sampled_from((0, 2, 4)), st.sampled_from(("top", "key", "nested")))
LIMITS = st.builds(Limits, max_items=st.integers(1, 4), max_depth=st.sampled_from((3, 6, 64)),
                   max_nodes=st.sampled_from((12, 40, 5_000_000)))


def _assert_same_refusal(text: str, display: str, limits: Limits) -> None:
    """The pre-pass refuses only what the checked reader refuses, in the same words."""
    try:
        refuse_long_list(text, display, limits)
    except UnsafeInput as fast:
        with pytest.raises(UnsafeInput) as checked:
            _load_checked(text, display, limits)
        assert str(fast) == str(checked.value)


@settings(max_examples=400, deadline=None)
@given(DOCS, LIMITS)
@pytest.mark.slow
def test_prepass_refuses_only_what_the_checked_reader_refuses_in_its_words(text, limits):
    _assert_same_refusal(text, "x.yaml", limits)


def _no_readers(monkeypatch):
    def fail(*_args, **_kwargs):
        raise AssertionError("the list was handed to an event-by-event reader")
    monkeypatch.setattr(safeyaml, "_load_plain", fail)
    monkeypatch.setattr(safeyaml, "_load_checked", fail)


def _json_pods(count: int) -> str:
    return json.dumps({"kind": "List", "items": [{"metadata": {"name": f"p{i}"}, "spec": {"containers": [
        {"name": "a"}]}} for i in range(count)]}, indent=2)


@pytest.mark.parametrize("make,where", [(pod_list, "54:3"), (block_pod_list, "554:3"), (flow_pod_list, "54:1"),
                                        (_json_pods, "604:5"), (json_pod_list, "1:7883"), (one_line_flow_pod_list, "4:6991")])
def test_a_pod_list_over_the_limit_is_refused_without_building_an_item(monkeypatch, make, where):
    text, limits = make(60), Limits(max_items=50)
    expected = str(pytest.raises(UnsafeInput, _load_checked, text, "pods.yaml", limits).value)
    _no_readers(monkeypatch)
    with pytest.raises(UnsafeInput) as refused:
        load_documents(text, "pods.yaml", limits)
    assert str(refused.value) == expected == f"pods.yaml:{where}: items[50]: a list of more than 50 items; refused"


def test_a_flow_list_on_one_line_is_refused_without_building_an_item(monkeypatch):
    """No line marks the items of `items: [{...}, {...}]`: bracket depth nominates them (numpy), each is proved."""
    text, limits = one_line_flow_pod_list(60), Limits(max_items=50)
    expected = str(pytest.raises(UnsafeInput, _load_checked, text, "pods.yaml", limits).value)
    _no_readers(monkeypatch)
    assert str(pytest.raises(UnsafeInput, load_documents, text, "pods.yaml", limits).value) == expected
    assert "items[50]: a list of more than 50 items" in expected


# Lines of a flow list, an item a line; several built to fool the count (two items on a line, a
# value spanning lines, a comma in a comment or a quoted value, a pair, a plain scalar).
FLOW_ITEMS = (
    "{a: 1},", "[x, y],", "{name: p1, spec: {x: [1, 2]}},", "{a: 1}, {b: 2},", "{a: [1,\n  2]},", "{a: 1} # c,",
    "{a: '}, {'},", '{a: "x,\n{b"},', "{a: 1}: b,", "{a: 1}\n,", "[a\n, b],", "{a: !t 1},", "{a: *x},",
    "&x {a: 1},", "plain,", "{? a: 1},", "{a: [[[[[[x]]]]]]},", "{a: 1} b,", "{a: 1}", "{a: 1},,", "{a: @b},",
    "[\n{a: 1},", "]\n- a,",
)
FLOW_PLAIN = ("{a: 1},", "[x],", "{b: [1, {c: d}]},")


def _flow_document(items: list[str], column: int, head: str) -> str:
    lines = "".join(f"{' ' * column}{item}\n" for item in items)
    return head + "[\n" + lines + " " * column + "]\n"


FLOW_DOCS = st.builds(_flow_document, st.lists(st.sampled_from(FLOW_PLAIN * 3 + FLOW_ITEMS), min_size=1,
                                               max_size=12),
                      st.sampled_from((0, 2, 4)), st.sampled_from(("", "items: ", "spec:\n  list: ")))


@settings(max_examples=300, deadline=None)
@given(FLOW_DOCS, LIMITS)
@pytest.mark.slow
def test_prepass_on_flow_lists_refuses_only_what_the_checked_reader_refuses_in_its_words(text, limits):
    _assert_same_refusal(text, "x.yaml", limits)


@pytest.mark.parametrize("column,head", [(0, "items:\n"), (2, "items:\n"), (4, "spec:\n  list:\n"), (0, "")])
def test_block_lists_at_any_column_are_refused_in_the_checked_words(monkeypatch, column, head):
    text = head + "".join(f"{' ' * column}- a: {i}\n{' ' * column}  b: [x, {{y: z}}]\n" for i in range(30))
    limits = Limits(max_items=20)  # an item may hold fewer events than the limit (a list in it could not pass it)
    expected = str(pytest.raises(UnsafeInput, _load_checked, text, "x.yaml", limits).value)
    _no_readers(monkeypatch)
    assert str(pytest.raises(UnsafeInput, load_documents, text, "x.yaml", limits).value) == expected
    assert "[20]: a list of more than 20 items" in expected


@pytest.mark.parametrize("text", [
    'items:\n- "a\n- b\n- c\n- d"\n- e\n',  # one quoted value whose lines look like items
    "items:\n- [a\n- b\n- c\n- d]\n- e\n",  # a flow list continued on lines that look like items
    "items:\n- |\n  - b\n  - c\n  - d\n- e\n",  # a block text, more indented
])
def test_lines_that_only_look_like_items_are_never_counted(text):
    limits = Limits(max_items=2)
    refuse_long_list(text, "x.yaml", limits)  # no refusal: two items
    assert len(load_documents(text, "x.yaml", limits)[0].value["items"]) == 2


@pytest.mark.parametrize("early,message", [
    ("- !custom 5\n", "tag"), ("- *nothing\n", "no anchor"), ("- [a]: b\n", "must be a string"),
    ("- [[[[[[x]]]]]]\n", "nested deeper"), ("- a: b: c\n", "malformed YAML"),
])
def test_a_fault_before_the_item_too_many_is_the_one_reported(early, message):
    text = "items:\n- a\n" + early + "".join(f"- {i}\n" for i in range(10))
    with pytest.raises(UnsafeInput, match=message):
        load_documents(text, "x.yaml", Limits(max_items=5, max_depth=5))


def test_a_list_at_the_ceiling_loads_in_full():
    text = pod_list(50)
    assert len(load_documents(text, "pods.yaml", Limits(max_items=50))[0].value["items"]) == 50


# JSON values built to fool an item count: strings holding brackets, commas, quotes, `#`, escapes and
# line breaks; nested arrays and objects; numbers YAML reads differently (1e3, -0).
JSON_STRINGS = st.sampled_from(["}, {", "], [", '"', "\\", "#x", " # c", "a\nb", "x: y", "- a", "?", "*a",
                                "!t", "{", "]:", "\t", "\u2028", "é", "", "p"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, -1, 1e3, 1.5, 10**20]) | JSON_STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_STRINGS, inner, max_size=3), max_leaves=8)
JSON_DOCS = st.builds(
    lambda head, items, layout: json.dumps({**head, "items": items}, **layout),
    st.dictionaries(st.sampled_from(["kind", "apiVersion", "a"]), JSON_VALUES, max_size=2),
    st.lists(JSON_VALUES, min_size=1, max_size=8),
    st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 1}, {"indent": 2, "ensure_ascii": False}]))


@settings(max_examples=300, deadline=None)
@given(JSON_DOCS, LIMITS)
@pytest.mark.slow
def test_prepass_on_json_refuses_only_what_the_checked_reader_refuses_in_its_words(text, limits):
    """A JSON document's arrays (`kubectl get -o json`, compact or indented) are counted by the JSON
    decoder and each item proved by libyaml alone; a refusal is the checked reader's, word for word."""
    _assert_same_refusal(text, "x.json", limits)


def test_a_json_array_too_deep_for_the_decoder_is_left_to_the_readers():
    text = '{"items": [' + "[" * 5000 + "]" * 5000 + ", 1, 2]}"
    refuse_long_list(text, "x.json", Limits(max_items=1))  # RecursionError in the decoder: no proof, no crash
    assert "nested deeper than 64 levels" in str(pytest.raises(UnsafeInput, load_documents, text, "x.json").value)


# Items of a flow list on one line, several built to fool a bracket count: brackets and commas in
# quoted values, a comment, pairs, plain scalars, nesting past the depth limit, syntax errors.
ONE_LINE_ITEMS = ("{a: 1}", "[x, y]", "{name: p1, spec: {x: [1, 2]}}", "'}, {'", '"a, [b"', "{a: '],['}", "plain",
                  "{a: 1}: b", "? a", "[[[[[[[x]]]]]]]", "{a: !t 1}", "*x", "&x [1]", "{a: 1} b", "@b", "",
                  "{a: [1,", "2]}", "#c", "x # c", "'it''s'", "{? a: 1}", "- a", "x: y", "a: b: c", "|", ">",
                  "'a", '"a', "%x", "a #b", "a: [b", "c]", "{a: b", "c}", "!!str", "? x: y", "a\tb", "- [x]")


# What may follow the list on its line or the next: libyaml reads on from the list's `[` (a possible
# key) to the end of its line before the list's first event, so an error there is reported first.
ONE_LINE_TAILS = ("",) * 4 + (" @", ": b", " : b", "\n@", "\n- x", " # c", "\n---\n@")
# A first item longer than that reach: libyaml has given the `[` up by the item too many, so the
# pre-pass can refuse (and so be checked) before what follows is read.
_FAR = "{b: '" + "x" * 1100 + "'}, "


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(("{a: 1}", "[x]", "b") * 3 + ONE_LINE_ITEMS), min_size=1, max_size=12),
       st.sampled_from(("", "items: ", "spec: {list: ", "- ", "x: 1\n---\n")), st.sampled_from((", ", ",")),
       LIMITS, st.sampled_from(ONE_LINE_TAILS), st.sampled_from(("", "", _FAR)))
@example(["{a: 1}", "{a: 1}", "{a: 1}", "|"], "", ", ", Limits(max_items=2), "", "")  # `|` is read before item [2]
@example(["[{a: 1}", "{a: 1}", "{a: 1}", "|]"], "", ", ", Limits(max_items=2), "", "")  # the inner list of a nested one
@example(["{a: 1}", "{a: 1}", "{a: 1}", "|"], "- ", ", ", Limits(max_items=2), "", "")  # a list in a block list
@example(["{a: 1}", "{a: 1}", "{a: 1}", "|"], "x: 1\n---\n", ", ", Limits(max_items=2), "", "")  # a later document
@example(["{a: 1}", "{a: 1}", "{a: 1}", "{a: 1}"], "", ", ", Limits(max_items=2), ": b", "")  # the list is a key
@example(["{a: 1}", "{a: 1}", "{a: 1}", "{a: 1}"], "", ", ", Limits(max_items=2), " @", "")  # an error after `]`
@example(["{a: 1}", "{a: 1}", "{a: 1}", "{a: 1}"], "", ", ", Limits(max_items=2), "\n@", "")  # ... on the next line
@example(["{a: 1}", "{a: 1}", "{a: 1}", "|"], "", ", ", Limits(max_items=2), "", _FAR)  # the `[` given up: refused
@pytest.mark.slow
def test_prepass_on_one_line_flow_lists_refuses_only_what_the_checked_reader_refuses_in_its_words(
        items, head, comma, limits, tail, lead):
    text = head + "[" + lead + comma.join(items) + "]" + ("}" if head.startswith("spec") else "") + tail + "\n"
    _assert_same_refusal(text, "x.yaml", limits)


@pytest.mark.parametrize("text,refused", [
    ("[{a: 1}, {a: 1}, {a: 1}, |]\n", "1:26: malformed YAML: found character that cannot start any token"),
    ("[[{a: 1}, {a: 1}, {a: 1}, |]]\n", "1:27: malformed YAML: found character"),
    ("x: 1\n---\n- [{a: 1}, {a: 1}, {a: 1}, |]\n", "3:28: malformed YAML: found character"),
    ("[{a: 1}, {a: 1}, {a: 1}, {a: 1}]: b\n", "1:1: a key must be a string, not a mapping or list"),
    ("[{a: 1}, {a: 1}, {a: 1}, {a: 1}]\n@\n", "2:1: malformed YAML: found character"),
    ('{"items": [{"a":1},{"a":1},{"a":1},{"a":1}], @}\n', "1:46: malformed YAML: found character"),
    ('{"items": [{"a":1},{"a":1},{"a":1},{"a":1}]}: b\n', "1:1: a key must be a string, not a mapping or list"),
])
def test_an_error_the_scanner_reads_before_the_item_too_many_is_the_one_reported(text, refused):
    """libyaml reads on from a possible simple key (`[a, b]: c`) to the end of its line, at most 1,024
    characters (yaml_parser_stale_simple_keys, libyaml src/scanner.c), before it gives the list's
    first event; the pre-pass refuses only what the checked reader refuses, in its words."""
    limits = Limits(max_items=2)
    _assert_same_refusal(text, "x.yaml", limits)
    assert str(pytest.raises(UnsafeInput, load_documents, text, "x.yaml", limits).value).startswith(f"x.yaml:{refused}")


@pytest.mark.parametrize("text,where", [
    # Past 1,024 characters from the list's `[` the scanner has given its key up: the item too many comes first.
    ("[" + _FAR + "{a: 1}, {a: 1}, {a: 1}, |]\n", "1:1119: [2]"),
    ("[" + _FAR + "{a: 1}, {a: 1}, {a: 1}, {a: 1}]: b\n", "1:1119: [2]"),
    ('{"items": [' + _FAR.replace("b", '"b"').replace(" ", "") + '{"a":1},{"a":1},{"a":1}], @}\n', "1:1129: items[2]"),
    # An item too many on a later line than the list's `[`: the key was given up at the line's end.
    ("[{a: 1}, {a: 1},\n {a: 1}, |]\n", "2:2: [2]"),
])
def test_an_item_too_many_past_the_scanners_reach_is_refused_by_the_prepass(text, where):
    limits = Limits(max_items=2)
    expected = str(pytest.raises(UnsafeInput, _load_checked, text, "x.yaml", limits).value)
    assert str(pytest.raises(UnsafeInput, refuse_long_list, text, "x.yaml", limits).value) == expected
    assert expected == f"x.yaml:{where}: a list of more than 2 items; refused"
