"""pytest plugin for mutation runs (`-p tools.mutation_fast`, set in setup.cfg): deselects the tests
that run the Pulumi mock monitor (`render`, `run_component`), so a mutant of a builder is judged by
the tests calling its pure functions in seconds, not by a minute of mock renders ending in a
timeout that mutmut would count as a kill."""
from __future__ import annotations

MOCK_RUNS = {"render", "run_component", "render_stack"}


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        code = getattr(getattr(item, "function", None), "__code__", None)
        (dropped if code is not None and MOCK_RUNS & set(code.co_names) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
