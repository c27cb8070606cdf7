"""`provisioner` command line: a thin argparse shell over the subcommand modules.

Each subcommand module exposes `register(subparsers)` (adds its parser through `add_command`,
which sets `run`); to add one, append (name, module, one-line help) to SUBCOMMANDS; `add_command`
takes that help from `HELP` (a test compares them).

Only the chosen subcommand's module is imported: the others would cost a `simulate` run their
imports (the advisor's HTTP server and metrics, disruption, tuning), about 0.1 s of CPU. The rest
appear in `provisioner --help` and in argparse's messages through stand-in parsers carrying the
same name and help.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import InputError

SUBCOMMANDS = (
    ("simulate", "provisioner.commands.simulate",
     "Show what Karpenter would launch for these manifests, what it costs, and why pods stay Pending."),
    ("serve", "provisioner.controller.command",
     "Run in the cluster: explain Pending pods (Events) and price the pending plan (metrics)."),
    ("odigos-prepare-nodes", "provisioner.commands.odigos_prepare",
     "Taint existing nodes odiglet has not prepared yet with odigos.io/needs-init:NoSchedule."),
    ("tune", "provisioner.commands.tune",
     "Search NodePool requirement changes (size windows, categories, memory and GPU caps, families, generations) "
     "that make the plan cheaper."),
    ("drift", "provisioner.commands.drift",
     "Show which NodePools and EC2NodeClasses a manifest change drifts, and how many nodes Karpenter replaces."),
    ("consolidate", "provisioner.commands.consolidate",
     "Show what Karpenter's consolidation would do now with this cluster snapshot, and why not elsewhere."),
    ("replay", "provisioner.commands.replay",
     "Replay a trace of workload events over simulated time: what Karpenter launches, disrupts and costs."),
    ("trace", "provisioner.commands.trace",
     "Write a replay trace: a synthetic diurnal one, or one read from a Kubernetes audit log."),
)
HELP = {name: help_text for name, _, help_text in SUBCOMMANDS}  # what each command's `register` says
EXIT_INVALID_INPUT = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def add_command(subparsers, name: str, run, description: str) -> argparse.ArgumentParser:
    """The parser of subcommand `name`: its help from HELP, its description, `run` as what it runs."""
    parser = subparsers.add_parser(name, help=HELP[name], description=description)
    parser.set_defaults(run=run)
    return parser


def write_out(text: str, path: str | None) -> None:
    """A command's output (`--out FILE`): written to `path`, or to stdout without one."""
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


def bounded_int(low: int, high: int):
    """An argparse type for every command's counts and ports: an integer in [low, high], else a
    message naming the range (argparse's usage error, exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {value}")
        return value

    return parse


def build_parser(chosen=None) -> argparse.ArgumentParser:
    """The full parser (every subcommand module imported), or, given `chosen` (a set of names),
    one where only those subcommands are real and the others are stand-ins with their help."""
    parser = argparse.ArgumentParser(prog="provisioner",
                                     description="Karpenter's provisioning decisions, offline or in the cluster.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, help_text in SUBCOMMANDS:
        if chosen is None or name in chosen:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def chosen_command(argv) -> str:
    """The subcommand named in argv, found by argparse itself with every command a stand-in
    (so `--help`, a missing or unknown command end here with argparse's usual message)."""
    args, _ = build_parser(chosen=()).parse_known_args(argv)
    return args.command


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(chosen={chosen_command(argv)}).parse_args(argv)
    try:
        code = args.run(args) or 0
        sys.stdout.flush()  # a reader that left (`| head -1`) shows here, not in the interpreter's exit
        return code
    except InputError as exc:
        more = len(getattr(exc, "errors", None) or [exc]) - 1  # one line: the first refusal, and how many follow
        print(f"error: {exc}" + (f" (and {more} more error(s))" if more else ""), file=sys.stderr)
        return EXIT_INVALID_INPUT
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of what is still buffered cannot
    fail again with a traceback (the recipe of Python's `signal` docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (a test's capture)
        pass
