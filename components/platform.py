"""The stack's configuration as the program and the offline tools use it: the config models'
checks (components.config, a leaf), then the version gate (components.versions: config the pinned
Karpenter release does not support, found by building the objects and checking them against that
release's CRDs and chart)."""
from __future__ import annotations

from pathlib import Path

from .config import ConfigError, PlatformConfig, build_config, read_stack_files
from .config.loader import RawStack, raw_from_runtime
from .versions import version_issues


def build_platform(project_dir: Path, raw: RawStack) -> PlatformConfig:
    """Validate a stack and its teams, then what the pinned release supports; ConfigError lists
    every problem of the first stage that has any."""
    platform = build_config(project_dir, raw)
    version_gaps = version_issues(platform)
    if version_gaps:
        raise ConfigError(version_gaps)
    return platform


def load_platform(project_dir: Path, stack: str) -> PlatformConfig:
    """Read and validate a stack from its files (the offline render and tests)."""
    return build_platform(project_dir, read_stack_files(project_dir, stack))


def load_from_pulumi(project_dir: Path) -> PlatformConfig:
    """Read and validate the stack the Pulumi engine is running (the program)."""
    import pulumi  # the engine's stack name; the SDK is there whenever the program runs

    return build_platform(project_dir, raw_from_runtime(project_dir, pulumi.get_stack()))


__all__ = ["build_platform", "load_from_pulumi", "load_platform"]
