"""The end-to-end speed work on `simulate -o json` (issue 14 item 4) keeps every interface: the
command line lists and runs every subcommand while importing only the chosen one, and the
hand-joined JSON is json.dumps' text for every item."""
import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from provisioner import cli, quantity
from provisioner.report import _encoder, render_json
from provisioner.result import NodeClaimResult, SimulationResult, Unschedulable

from tests.provisioner.prov_builders import deployment, nodeclass, nodepool, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = [name for name, _, _ in cli.SUBCOMMANDS]


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_help_lists_every_command_exactly_as_the_full_parser_does(capsys):
    text = _help(["--help"], capsys)
    assert text == cli.build_parser().format_help()
    assert NAMES == ["simulate", "serve", "odigos-prepare-nodes", "tune", "drift", "consolidate", "replay", "trace"]
    for name in NAMES:
        assert f"\n    {name}" in text


def test_stand_in_help_is_the_help_each_command_registers():
    parser = cli.build_parser()
    [action] = [a for a in parser._actions if a.dest == "command"]
    registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == {name: help_text for name, _, help_text in cli.SUBCOMMANDS}


@pytest.mark.parametrize("name", NAMES)
def test_each_command_help_shows_its_own_options(name, capsys):
    text = _help([name, "--help"], capsys)
    assert text.startswith(f"usage: provisioner {name} [-h]")
    assert text == cli.build_parser()._subparsers._group_actions[0].choices[name].format_help()


def test_unknown_or_missing_command_is_argparse_usage_error(capsys):
    for argv, message in ((["bogus"], "invalid choice: 'bogus' (choose from 'simulate', 'serve'"),
                          ([], "the following arguments are required: COMMAND")):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.slow
def test_simulate_imports_none_of_the_other_commands(tmp_path):
    import yaml
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump_all([nodepool(), nodeclass(), deployment("a", replicas=2, cpu="1")]))
    code = ("import sys; from provisioner.cli import main; code = main(['simulate', '-f', sys.argv[1], '-o', 'json']);"
            "print(sorted(m for m in sys.modules if m.startswith(('provisioner.controller', 'provisioner.disruption',"
            " 'provisioner.cost', 'provisioner.commands.', 'prometheus_client', 'http.server'))), file=sys.stderr);"
            "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["scheduled"] == 2
    assert done.stderr.strip() == "['provisioner.commands.simulate']"


def test_serve_is_still_wired_to_the_advisor():
    args = cli.build_parser(chosen={"serve"}).parse_args(["serve", "--mode", "metrics-only"])
    from provisioner.controller import command
    assert args.run is command.run and args.mode == "metrics-only"


# JSON values as the result may hold them, plus everything json.dumps accepts that they should not.
SCALARS = (st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=True)
           | st.text(max_size=8) | st.sampled_from(["m5.large", "default/web-0", "é\u2028\x00\"\\"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4)
                      | st.dictionaries(st.integers(0, 3) | st.booleans() | st.none() | st.floats(0, 2), inner,
                                        max_size=2), max_leaves=12)
ITEMS = st.dictionaries(st.text(max_size=6) | st.integers(0, 3), VALUES, max_size=6) | VALUES


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEMS, max_size=4), st.lists(st.sampled_from(["a", "b", "c\u00e9"]), max_size=300))
@pytest.mark.slow
def test_each_item_is_json_dumps_text(items, options):
    emit = _encoder()
    # the same long list twice, as NodeClaims of one shape share their options
    items = items + [{"instance_type_options": options, "round": 1}, {"instance_type_options": list(options)}]
    for item in items:
        out = []
        try:
            expected = json.dumps(item, allow_nan=False)
        except ValueError:  # Infinity or NaN: refused, never written as a bare (non-JSON) token
            with pytest.raises(ValueError):
                emit(item, out)
            continue
        emit(item, out)
        assert "".join(out) == expected


def _reference(result) -> str:
    """The previous render_json: json.dumps per item, joined in the same layout."""
    doc = result.to_dict()

    def member(key, value):
        if not isinstance(value, list) or not value:
            return f"  {json.dumps(key)}: {json.dumps(value)}"
        return f"  {json.dumps(key)}: [\n    " + ",\n    ".join(map(json.dumps, value)) + "\n  ]"
    return "{\n" + ",\n".join(member(k, v) for k, v in doc.items()) + "\n}\n"


def test_document_is_byte_identical_to_per_item_json_dumps():
    result = run(nodepool(), nodeclass(), deployment("a", replicas=5, cpu="3"),
                 deployment("b", replicas=2, cpu="9", node_selector={"x": "y"}))
    assert result.nodeclaims and result.unschedulable
    assert render_json(result) == _reference(result)
    def odd(price):
        return SimulationResult(nodeclaims=[NodeClaimResult("p\u00e9", "t", "spot", "z", price, True, ["ns/\"q\""],
                                                            {"cpu": 1500}, {"memory": 2**30 * 1000}, ["t", "u"], round=2)],
                                unschedulable=[Unschedulable("ns/x", "no \u2603 fits")], pods=2)
    assert render_json(odd(0.5)) == _reference(odd(0.5))
    assert json.loads(render_json(odd(0.5)))["nodeclaims"][0]["price_usd_hour"] == 0.5
    with pytest.raises(ValueError):  # a bare Infinity is not JSON: never written
        render_json(odd(math.inf))


def test_formatted_resources_are_fresh_dicts():
    first = quantity.format_resources({"memory": 2**30 * 1000, "cpu": 1500, "pods": 0})
    assert first == {"cpu": "1500m", "memory": "1Gi"} and list(first) == ["cpu", "memory"]
    first["cpu"] = "changed"
    assert quantity.format_resources({"memory": 2**30 * 1000, "cpu": 1500, "pods": 0}) == {"cpu": "1500m",
                                                                                            "memory": "1Gi"}


def test_phase_breakdown_covers_a_whole_process_run():
    from bench import engine
    phases = engine.e2e_phases(50, 1)
    assert list(phases) == list(engine.PHASE_NAMES)
    assert all(seconds >= 0 for seconds in phases.values())
    assert phases["imports"] > 0 and phases["solve (catalog, scheduler, rounds)"] > 0
