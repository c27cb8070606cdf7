"""`python -m offline.render STACK [--preview] [--out DIR]`: run the real __main__.py under the mock monitor and write build/STACK/.

Config is loaded as the Pulumi CLI would load it (Pulumi.yaml defaults, then
stacks/Pulumi.<STACK>.yaml, then the team files); data sources get labelled placeholders.
Exit 0 when rendered, 2 when the config is invalid (build/STACK/ is then left untouched), 4 when
a rendered object fails the upstream checks (CRD schema/CEL, chart values; build/STACK/ is written),
5 when the build folder cannot be written (an I/O failure: permissions, a full disk; the previous
build/STACK/ is kept whole). Renders into the same folder at once take turns (a lock beside it).

`--preview` runs the program as `pulumi preview` sees it (default out dir build/STACK-preview):
data sources answered, but every attribute a provider computes on create (ids, ARNs, URLs,
digests) unknown, written as "[unknown]" in resources.json. The policy pack then judges that
folder, as `pulumi preview --policy-pack policies` would (report in policy-report.json; exit 3
when a mandatory policy is violated).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import runpy
import shutil
import stat
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import yaml

from components.config import ConfigError, read_stack_files
from components.platform import build_platform
from components.config.loader import RawStack
from kubefacts.errors import shown
from kubefacts.yamlread import file_kind

from .cost import cost_report, summary_line

if TYPE_CHECKING:
    from .monitor import Capture

# The Pulumi SDK (and the mock monitor and placeholders built on it) is imported where it is used,
# once the config has passed: a refused stack file is reported without first paying for pulumi and grpc.

SECRET_PLACEHOLDER = "PLACEHOLDER-SECRET-NOT-DECRYPTED-OFFLINE"
# 3 is policies.check's (a mandatory violation, with --preview).
EXIT_OK, EXIT_CONFIG, EXIT_UPSTREAM, EXIT_IO = 0, 2, 4, 5


def cli_config(raw: RawStack) -> tuple[dict[str, str], list[str]]:
    """Config as the CLI hands it to a program: strings, objects as JSON; secrets can't be
    decrypted offline, so they get a placeholder and stay marked secret."""
    values: dict[str, str] = {}
    for key, value in raw.values.items():
        if key in raw.secret_keys:
            values[key] = SECRET_PLACEHOLDER
        elif isinstance(value, (dict, list)):
            values[key] = json.dumps(value)
        elif isinstance(value, bool):
            values[key] = "true" if value else "false"
        else:
            values[key] = str(value)
    return values, sorted(raw.secret_keys)


def render_stack(project_dir: Path, stack: str, preview: bool = False) -> Capture:
    """Validate, then run the program (as `pulumi up` would, or with `preview` as `pulumi
    preview` would); raises ConfigError before anything is declared."""
    raw = read_stack_files(project_dir, stack)
    platform = build_platform(project_dir, raw)
    config, secret_keys = cli_config(raw)
    from . import placeholders
    from .monitor import run
    mocks = placeholders.PlaceholderMocks(platform.settings.cluster.region, preview=preview)
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))
    main = project_dir / "__main__.py"
    return run(lambda: runpy.run_path(str(main), run_name="__main__"), mocks,
               stack=stack, config=config, secret_keys=secret_keys, preview=preview)


def _manifest_file(manifest: dict[str, Any], taken: set[str]) -> str:
    metadata = manifest.get("metadata") or {}
    base = f"{manifest['kind']}-{metadata.get('name', 'unnamed')}".lower()
    filename = f"{base}.yaml"
    if filename in taken:  # same kind and name in two namespaces
        filename = f"{base}-{metadata.get('namespace', 'default')}.yaml".lower()
    taken.add(filename)
    return filename


def _policy_documents(capture: Capture) -> dict[str, Any]:
    """Every IAM policy document the stack declares, by file name."""
    from .monitor import UNKNOWN

    documents: dict[str, Any] = {}
    fields = {
        "aws:iam/policy:Policy": ("policy", ""),
        "aws:iam/rolePolicy:RolePolicy": ("policy", ""),
        "aws:iam/role:Role": ("assumeRolePolicy", "-trust"),
        "aws:sqs/queuePolicy:QueuePolicy": ("policy", ""),
    }
    for resource in capture.resources:
        if resource.type in fields:
            key, suffix = fields[resource.type]
            text = resource.inputs.get(key)
            if isinstance(text, str) and text != UNKNOWN:
                documents[f"{resource.name}{suffix}.json"] = json.loads(text)
    return documents


def write_build(capture: Capture, out_dir: Path) -> dict[str, int]:
    """Write resources.json, outputs.json, manifests/ and iam/ into a fresh out_dir atomically:
    everything goes to a staging folder beside it, which then takes out_dir's place (the old one
    is moved aside first and removed last, so out_dir is never half written or missing for long).
    Callers that may run at once hold `build_lock(out_dir)`."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        (staging / "resources.json").write_text(json.dumps([r.to_json() for r in capture.resources], indent=2,
                                                            allow_nan=False) + "\n")
        (staging / "outputs.json").write_text(json.dumps(capture.outputs, indent=2, sort_keys=True, allow_nan=False) + "\n")
        manifests, iam = staging / "manifests", staging / "iam"
        manifests.mkdir()
        iam.mkdir()
        taken: set[str] = set()
        for resource in capture.resources:
            inputs = resource.inputs
            if resource.type == "kubernetes:helm.sh/v3:Release":
                release = inputs.get("name") or resource.name
                document = {
                    "release": release,
                    "chart": inputs.get("chart"),
                    "repository": (inputs.get("repositoryOpts") or {}).get("repo"),
                    "version": inputs.get("version"),
                    "namespace": inputs.get("namespace"),
                    "skipCrds": inputs.get("skipCrds", False),
                    "values": inputs.get("values", {}),
                }
                (manifests / f"helm-{release}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
            elif resource.type.startswith("kubernetes:") and "kind" in inputs and "apiVersion" in inputs:
                manifest = {k: v for k, v in inputs.items() if not k.startswith("__")}
                (manifests / _manifest_file(manifest, taken)).write_text(yaml.safe_dump(manifest, sort_keys=False))
        for filename, document in _policy_documents(capture).items():
            (iam / filename).write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
        (staging / "cost.json").write_text(json.dumps(cost_report(
            r.inputs for r in capture.resources if r.type.startswith("kubernetes:karpenter.sh/")
            or r.type.startswith("kubernetes:karpenter.k8s.aws/")), indent=2, allow_nan=False) + "\n")
        old = None
        if os.path.lexists(out_dir):
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-old-", dir=out_dir.parent))
            os.replace(out_dir, old / out_dir.name)
        try:
            os.replace(staging, out_dir)
        except BaseException:
            if old is not None:  # put the previous build back: a failed render keeps the last good one
                os.replace(old / out_dir.name, out_dir)
                old.rmdir()
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dict(Counter(r.type for r in capture.resources))


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """An exclusive lock on `out_dir` (flock on `.<name>.lock` beside it) for as long as the block
    runs: two renders into one folder take turns instead of removing each other's work."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # O_NONBLOCK: a named pipe planted as the lock file is an error (ENXIO), not a hang.
    fd = os.open(out_dir.parent / f".{out_dir.name}.lock", os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@dataclass(frozen=True)
class Published:
    counts: dict[str, int]
    cost: dict[str, Any]
    manifests: int
    iam: int


def publish_build(capture: Capture, out_dir: Path) -> Published:
    """`write_build` under `build_lock`, and what the summary reports read back before the lock
    is released (another render may replace the folder right after)."""
    with build_lock(out_dir):
        counts = write_build(capture, out_dir)
        return Published(counts, json.loads((out_dir / "cost.json").read_text()),
                         len(list((out_dir / "manifests").iterdir())), len(list((out_dir / "iam").iterdir())))


def refuse_out(out_dir: Path) -> str | None:
    """Why `out_dir` cannot be a build folder (it exists and is not a folder), or None."""
    try:
        mode = out_dir.stat().st_mode
    except OSError:  # missing, or under something that is not a folder: writing it reports that
        return None
    return None if stat.S_ISDIR(mode) else f"{shown(out_dir)}: is {file_kind(mode)}, not a folder; nothing rendered"


def _quiet_loop_teardown(unraisable: sys.UnraisableHookArgs) -> None:
    """The SDK leaves per-thread event loops behind; their __del__ at interpreter exit reports a
    closed self-pipe. That report is noise, not a render failure: drop only that one."""
    if isinstance(unraisable.exc_value, ValueError) and "BaseEventLoop.__del__" in repr(unraisable.object):
        return
    sys.__unraisablehook__(unraisable)


def _pulumi_run_error() -> type[Exception]:
    import pulumi

    return pulumi.RunError


def main(argv: list[str] | None = None) -> int:
    sys.unraisablehook = _quiet_loop_teardown
    parser = argparse.ArgumentParser(prog="python -m offline.render", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="Stack name (stacks/Pulumi.<stack>.yaml).")
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="Folder holding Pulumi.yaml.")
    parser.add_argument("--out", type=Path, default=None,
                        help="Output folder (default build/<stack>, with --preview build/<stack>-preview).")
    parser.add_argument("--preview", action="store_true",
                        help="Render as `pulumi preview` sees the program (computed attributes unknown), "
                             "then run the policy pack over it.")
    args = parser.parse_args(argv)
    project_dir = args.project_dir.resolve()
    out_dir = args.out or project_dir / "build" / (f"{args.stack}-preview" if args.preview else args.stack)
    refused = refuse_out(out_dir)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        capture = render_stack(project_dir, args.stack, preview=args.preview)
    except ConfigError as err:
        for issue in err.issues:
            print(f"error: {issue}", file=sys.stderr)
        print(f"{len(err.issues)} config error(s); nothing rendered ({shown(out_dir)} untouched).", file=sys.stderr)
        return EXIT_CONFIG
    except _pulumi_run_error() as err:  # evaluated only when an error gets this far
        # What the program refuses once it sees the (placeholder) account, e.g. no subnet found.
        print(f"error: {err}", file=sys.stderr)
        print(f"nothing rendered ({shown(out_dir)} untouched).", file=sys.stderr)
        return EXIT_CONFIG
    try:
        published = publish_build(capture, out_dir)
    except OSError as err:  # the folder is read-only, the disk is full, ...
        print(f"error: cannot write {shown(out_dir)}: {err.strerror or err}", file=sys.stderr)
        return EXIT_IO
    except ValueError as err:  # json.dumps(allow_nan=False): a build file never holds Infinity or NaN
        print(f"error: a build file would hold a number that is not finite ({err}); nothing written "
              f"({shown(out_dir)} untouched)", file=sys.stderr)
        return EXIT_CONFIG
    counts = published.counts
    how = "as `pulumi preview` sees it" if args.preview else "offline"
    from . import placeholders
    print(f"Rendered stack {args.stack!r} {how} (placeholder AWS facts, account {placeholders.ACCOUNT_ID}):")
    width = max(map(len, counts), default=0)
    for type_token, count in sorted(counts.items()):
        print(f"  {type_token:<{width}}  {count}")
    print(f"  {'total':<{width}}  {sum(counts.values())}")
    print(summary_line(published.cost))
    # The path as the user can open it from where they ran the command.
    cwd = Path.cwd()
    shown_out = out_dir.resolve().relative_to(cwd) if out_dir.resolve().is_relative_to(cwd) else out_dir
    print(f"Wrote {shown(shown_out)}/resources.json, outputs.json, cost.json, manifests/ ({published.manifests} files), "
          f"iam/ ({published.iam} files)")
    if args.preview:
        from .monitor import UNKNOWN

        unknown = unknown_paths(capture)
        print(f"Unknown until applied ({UNKNOWN}): {sum(map(len, unknown.values()))} value(s) in {len(unknown)} resource(s).")
    status = _upstream_checks(capture)
    if args.preview:
        from policies import check

        policy_status = check.main([str(out_dir)])
        status = status or policy_status
    return status


def unknown_paths(capture: Capture) -> dict[str, list[str]]:
    """Per resource name, the input paths still unknown (`spec.template.spec.containers[0].image`)."""
    from .monitor import UNKNOWN

    def walk(value: Any, path: str) -> Iterator[str]:
        if value == UNKNOWN:
            yield path
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from walk(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, f"{path}[{index}]")

    found = {r.name: list(walk(r.inputs, "")) for r in capture.resources}
    return {name: paths for name, paths in found.items() if paths}


def _upstream_checks(capture: Capture) -> int:
    """CRD schema + CEL and helm values checks (offline/checks.py); exit 4 when any fails."""
    from .checks import available, check_capture

    if not available():
        print("Upstream checks skipped: ../shared/reference/ not present.")
        return 0
    problems = check_capture(capture)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"Upstream checks (CRD schemas and CEL rules, chart values): {len(problems)} problem(s).")
    return 4 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
