"""Typed configuration: one pydantic model per component, the single source of every default."""

from .errors import ConfigError, ConfigIssue
from .loader import build_config, read_stack_files
from .stack import PROJECT, PlatformConfig, StackSettings
from .teams import TEAM_LABEL, Team

__all__ = [
    "PROJECT",
    "TEAM_LABEL",
    "ConfigError",
    "ConfigIssue",
    "PlatformConfig",
    "StackSettings",
    "Team",
    "build_config",
    "read_stack_files",
]
