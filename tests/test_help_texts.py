"""Every `--help` text of the project's commands is a whole sentence: a capital first letter and a
final full stop (the commands' options, their subcommands, and their descriptions)."""

from __future__ import annotations

import argparse

import pytest

from offline import pr_report, preflight, render, tune, upgrade
from policies import check
from provisioner import cli

SKIPPED_SUBCOMMANDS: set[str] = set()  # every subcommand is held to it, `serve` included


def captured_parser(monkeypatch, main, argv):
    found = {}

    def capture(self, args=None, namespace=None):
        found["parser"] = self
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(SystemExit):
        main(argv)
    return found["parser"]


def texts(parser: argparse.ArgumentParser, where: str):
    if parser.description:
        yield f"{where} description", parser.description
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest not in SKIPPED_SUBCOMMANDS:
                    yield f"{where} {choice.dest}", choice.help
            for name, sub in action.choices.items():
                if name not in SKIPPED_SUBCOMMANDS:
                    yield from texts(sub, f"{where} {name}")
        elif action.help and action.help is not argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
            yield f"{where} {'/'.join(action.option_strings) or action.dest}", action.help


def parsers(monkeypatch):
    yield "provisioner", cli.build_parser()
    yield "offline.upgrade", captured_parser(monkeypatch, upgrade.main, ["prod", "--to", "1.14.1"])
    yield "offline.preflight", captured_parser(monkeypatch, preflight.main, ["prod", "--to", "1.14.1"])
    yield "offline.render", captured_parser(monkeypatch, render.main, ["dev"])
    yield "offline.pr_report", captured_parser(monkeypatch, pr_report.main, ["dev", "--base", "x"])
    yield "policies.check", captured_parser(monkeypatch, check.main, ["build/dev"])
    yield "offline.tune", captured_parser(monkeypatch, tune.main, [])


def test_every_help_text_is_a_whole_sentence(monkeypatch):
    broken = []
    for name, parser in list(parsers(monkeypatch)):
        for where, text in texts(parser, name):
            text = text.strip()
            if not (text[:1].isupper() or not text[:1].isalpha()) or not text.endswith("."):
                broken.append(f"{where}: {text!r}")
    assert broken == []
