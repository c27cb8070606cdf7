"""Reading YAML manifests from files and folders (the only file I/O besides catalog files)."""
from __future__ import annotations

import os
import stat

from .errors import InputError
from kubefacts.yamlread import Limits, UnsafeInput, file_kind, load_yaml_files

YAML_SUFFIXES = (".yaml", ".yml", ".json")
# Manifests may be whole renders; config files use the default limits.
MANIFEST_LIMITS = Limits(max_bytes=64 * 2**20)


def manifest_files(path: str) -> list:
    """The file itself, or every YAML/JSON file under a folder (sorted, recursive)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("no such file or directory", origin=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", origin=path) from None
    if stat.S_ISREG(mode):
        return [path]
    if stat.S_ISDIR(mode):
        found: list[str] = []
        for root, dirs, files in os.walk(path):
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(YAML_SUFFIXES))
        return found  # a named pipe among them is refused by the reader, naming it
    raise InputError(f"is {file_kind(mode)}, not a regular file or folder; refused", origin=path)


def manifest_limits(max_pods: int) -> Limits:
    """Limits for manifests: a list may hold as many items as the pod ceiling allows."""
    return Limits(max_bytes=MANIFEST_LIMITS.max_bytes, max_items=max(max_pods, MANIFEST_LIMITS.max_items))


def read_documents(path: str, limits: Limits = MANIFEST_LIMITS) -> tuple[list, list]:
    """(documents, origins) of one YAML file, through the bounded loader (kubefacts.yamlread);
    a refused or malformed file raises InputError naming file, line and key path."""
    try:
        documents = load_yaml_files(path, path, limits)
    except UnsafeInput as exc:
        message = exc.message
        if "list of more than" in message:
            message += " (lists are bounded by the pod ceiling: raise it with --max-pods)"
        raise InputError(message, origin=exc.origin, path=exc.path or None) from None
    docs = [d.value for d in documents]
    origins = [f"{path}:{d.line} (document {i + 1})" for i, d in enumerate(documents)]
    return docs, origins


def read_paths(paths, limits: Limits = MANIFEST_LIMITS) -> tuple[list, list]:
    """All documents of all paths, with an origin ("file:line (document n)") for each."""
    docs, origins = [], []
    for path in paths:
        for file in manifest_files(path):
            d, o = read_documents(file, limits)
            docs.extend(d)
            origins.extend(o)
    return docs, origins
