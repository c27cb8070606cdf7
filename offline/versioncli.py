"""What `offline.upgrade` and `offline.preflight` share: their arguments and how they refuse input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components import reference
from components.config import ConfigError

# Raised by the version check and the config loader: the user's input, never a crash (exit 2).
INPUT_ERRORS = (reference.UnsupportedVersion, ConfigError)


def version_argument(text: str) -> str:
    """A release as the user may spell it: Karpenter's tags are `v1.12.2`, its data files `1.12.2`."""
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


def parser(prog: str, description: str, *, cluster: bool = False) -> argparse.ArgumentParser:
    """`STACK --to VERSION [-o json|table] [--project-dir DIR]`, plus kubeconfig options for a cluster."""
    out = argparse.ArgumentParser(prog=prog, description=description)
    out.add_argument("stack", help="Stack name (stacks/Pulumi.<stack>.yaml).")
    out.add_argument("--to", required=True, type=version_argument,
                     help=f"Target Karpenter version, as 1.12.2 or as its tag v1.12.2 ({', '.join(reference.supported())}).")
    if cluster:
        out.add_argument("--kubeconfig", default=None, help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
        out.add_argument("--context", default=None, help="Kubeconfig context (default: the current one).")
    out.add_argument("-o", "--output", choices=("json", "table"), default="table", help="Output format.")
    out.add_argument("--project-dir", type=Path, default=Path.cwd(), help="Folder holding Pulumi.yaml.")
    return out


def refuse(err: Exception, stack: str) -> int:
    """Print an input error the way both commands do; the exit status for it."""
    if isinstance(err, ConfigError):
        print(f"error: stack {stack} is invalid: {'; '.join(map(str, err.issues))}", file=sys.stderr)
    else:
        print(f"error: {err}", file=sys.stderr)
    return 2
