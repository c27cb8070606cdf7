"""Property tests for the one bounded loader (kubefacts.yamlread) and the config loader on top."""
from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from components.config import ConfigError
from components.config.loader import load_yaml
from kubefacts.yamlread import UnsafeInput, load_documents, load_json_text

KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8)
SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                         max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(DOCUMENTS)
@pytest.mark.slow
def test_yaml_of_any_json_value_loads_back_equal(value):
    text = yaml.safe_dump({"v": value}, allow_unicode=True)
    assert load_documents(text, "x.yaml")[0].value == {"v": value}


@settings(max_examples=150, deadline=None)
@given(DOCUMENTS)
def test_json_of_any_value_loads_back_equal(value):
    assert load_json_text(json.dumps(value), "x.json") == value


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_text_loads_or_is_refused_with_the_file_name(text):
    try:
        load_documents(text, "x.yaml")
    except UnsafeInput as err:
        assert str(err).startswith("x.yaml")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_config_loader_turns_any_bytes_into_a_value_or_a_config_error(tmp_path, data):
    path = tmp_path / "team.yaml"
    path.write_bytes(data)
    try:
        load_yaml(path, "stacks/teams/team.yaml")
    except ConfigError as err:
        assert all(issue.file == "stacks/teams/team.yaml" for issue in err.issues)


@pytest.mark.parametrize("depth,refused", [(63, False), (64, False), (65, True)])
def test_depth_limit_is_exact(depth, refused):
    text = "[" * depth + "]" * depth
    if refused:
        with pytest.raises(UnsafeInput, match="nested deeper than 64"):
            load_documents(text, "x.yaml")
    else:
        assert load_documents(text, "x.yaml")[0].value is not None
