"""The one-pass YAML reader (kubefacts.yamlread._load_plain) gives exactly what the checked
two-pass path gives (values, document lines, shared aliases), or gives up and lets that path decide."""
from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from bench.engine import benchmark_shape_objects
from kubefacts.yamlread import (DEFAULT_LIMITS, Limits, UnsafeInput, _ListTooLong, _load_checked, _load_plain,
                                  load_documents)

TOKENS = ("a", "b", "'q'", '"d"', "1", "0x1F", "0o17", "1_000", "1:30", "1.5", "1e3", ".inf", "-.inf", ".nan",
          "true", "yes", "Off", "~", "null", "", "2024-01-01", "2024-01-01T10:00:00Z", "=", "<<", "!!str 5",
          "!!int 7", "!!binary aGk=", "!!python/none ''", "&x 1", "*x", "&y a", "*y", "*z", "!!map [a]", "9" * 4400)
SCALAR = st.sampled_from(TOKENS)


def _flow(children):
    keys = st.sampled_from(("a", "b", "a", "<<", "1", "=", "*y", "&y k", "2024-01-01", "[k]"))
    mapping = st.lists(st.tuples(keys, children), max_size=4).map(
        lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}")
    sequence = st.lists(children, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
    prefix = st.sampled_from(("", "", "", "&z ", "&x ", "!!map ", "!!set "))
    return st.tuples(prefix, mapping | sequence).map("".join)


FLOW = st.recursive(SCALAR, _flow, max_leaves=12)
STREAMS = st.lists(FLOW, min_size=1, max_size=3).map("\n---\n".join)
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=10)


def _same(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    try:
        fast = _load_plain(text, limits)
    except _ListTooLong:
        # The one refusal the one-pass reader words itself: exactly as the checked path would.
        with pytest.raises(UnsafeInput) as checked:
            _load_checked(text, "x.yaml", limits)
        with pytest.raises(UnsafeInput) as mine:
            load_documents(text, "x.yaml", limits)
        assert str(mine.value) == str(checked.value)
        return
    try:
        checked = _load_checked(text, "x.yaml", limits)
    except UnsafeInput:
        assert fast is None  # every refusal is the checked path's
        return
    if fast is not None:
        assert fast == checked
        assert [d.line for d in fast] == [d.line for d in checked]


@settings(max_examples=300, deadline=None)
@given(STREAMS)
@pytest.mark.slow
def test_one_pass_equals_checked_path_or_gives_up_on_any_flow_stream(text):
    _same(text)


@settings(max_examples=100, deadline=None)
@given(STREAMS)
@pytest.mark.slow
def test_one_pass_keeps_tight_limits_like_the_checked_path(text):
    _same(text, Limits(max_depth=2, max_alias_nodes=3, max_nodes=8, max_items=2))


@settings(max_examples=100, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=3), st.booleans())
def test_one_pass_reads_shared_blocks_as_the_same_objects(values, share):
    shared = {"k": values}
    docs = [{"first": shared, "second": shared if share else dict(shared), "rest": values}]
    text = yaml.safe_dump_all(docs, allow_unicode=True)
    fast = _load_plain(text, DEFAULT_LIMITS)
    assert fast is not None and fast == _load_checked(text, "x.yaml")
    value = fast[0].value
    assert (value["first"] is value["second"]) == (share and "&id" in text)


@pytest.mark.slow
def test_ordinary_manifests_with_anchors_are_read_in_one_pass():
    text = yaml.safe_dump_all(benchmark_shape_objects(500))
    assert "&id001" in text  # selectors and template labels share one block
    fast = _load_plain(text, DEFAULT_LIMITS)
    assert fast is not None and len(fast) == 3 + len(benchmark_shape_objects(500)) - 3
    assert fast == _load_checked(text, "x.yaml")


@pytest.mark.parametrize("text,message", [
    ("a: 1\na: 2\n", "duplicate key 'a'"),
    ("1: x\n", "must be a string"),
    ("a: .inf\n", "not a finite number"),
    ("a: &x [*x]\n", "cycle"),
    ("a: !!set {b}\n", "not allowed"),
])
def test_refusals_keep_the_checked_messages(text, message):
    assert _load_plain(text, DEFAULT_LIMITS) is None
    with pytest.raises(UnsafeInput, match=message):
        load_documents(text, "x.yaml")


def test_a_list_over_the_item_limit_is_refused_in_one_pass_as_the_checked_path_words_it():
    """A 100,000-item List used to be parsed twice before its refusal (once per reader)."""
    text = "kind: List\nitems:\n" + "".join(f"- {{name: p{i}}}\n" for i in range(5))
    limits = Limits(max_items=3)
    with pytest.raises(_ListTooLong):
        _load_plain(text, limits)
    with pytest.raises(UnsafeInput) as checked:
        _load_checked(text, "x.yaml", limits)
    with pytest.raises(UnsafeInput) as mine:
        load_documents(text, "x.yaml", limits)
    assert str(mine.value) == str(checked.value)
    assert "items[3]: a list of more than 3 items; refused" in str(mine.value)  # the 4th item, index 3


@pytest.mark.parametrize("text,where", [
    ("config:\n  a: 1\n  1: x\n", "x.yaml:3:3: config.1: "),
    ("items:\n- metadata:\n    labels: {true: x}\n", "x.yaml:3:14: items[0].metadata.labels.true: "),
    ("a: [{~: x}]\n", "x.yaml:1:6: a[0].~: "),
    ("---\na: 1\n---\nb: [x, {!!int 5: 1}]\n", "x.yaml:4:9: b[1].5: "),
    ("a: {b: &k 1}\nc: [x, {*k : 2}]\n", "x.yaml:1:8: c[1].*k: "),  # the line of the value, the path of the key
])
def test_a_key_that_is_not_text_is_refused_with_its_key_path(text, where):
    with pytest.raises(UnsafeInput) as refused:
        load_documents(text, "x.yaml")
    assert str(refused.value).startswith(where)
    assert "must be a string (quote it" in str(refused.value)
