"""`provisioner` command line: a thin argparse shell over the subcommand modules.

Each subcommand module exposes `register(subparsers)` (adds its parser and sets `run`); to add
one, import its module and append it to SUBCOMMANDS.
"""
from __future__ import annotations

import argparse
import sys

from .commands import consolidate as consolidate_command
from .commands import drift as drift_command
from .commands import odigos_prepare as odigos_prepare_command
from .commands import simulate as simulate_command
from .commands import tune as tune_command
from .controller import command as serve_command
from .errors import InputError

SUBCOMMANDS = [simulate_command, serve_command, odigos_prepare_command, tune_command, drift_command, consolidate_command]
EXIT_INVALID_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="provisioner",
                                     description="Karpenter's provisioning decisions, offline or in the cluster.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID_INPUT
