"""Reading YAML manifests from files and folders (the only file I/O besides catalog files)."""
from __future__ import annotations

import os

import yaml

from .errors import InputError

try:  # libyaml is several times faster on big renders; fall back to the pure-Python loader
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader



class _KubectlLoader(_Loader):
    """YAML 1.1 resolves a bare `=` to the `value` tag, which PyYAML cannot construct; kubectl
    (go-yaml) reads it as the string "=" (e.g. a toleration or label value)."""


_KubectlLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))

YAML_SUFFIXES = (".yaml", ".yml", ".json")


def manifest_files(path: str) -> list:
    """The file itself, or every YAML/JSON file under a folder (sorted, recursive)."""
    if os.path.isfile(path):
        return [path]
    if os.path.isdir(path):
        found = []
        for root, dirs, files in os.walk(path):
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(YAML_SUFFIXES))
        return found
    raise InputError("no such file or directory", origin=path)


def read_documents(path: str) -> tuple[list, list]:
    """(documents, origins) of one YAML file; malformed YAML raises InputError naming file and line."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", origin=path) from None
    docs, origins = [], []
    try:
        loader = _KubectlLoader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                line = node.start_mark.line + 1
                docs.append(loader.construct_document(node))
                origins.append(f"{path}:{line} (document {index + 1})")
                index += 1
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise InputError(f"malformed YAML: {exc.problem or exc.context}", origin=where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", origin=path) from None
    return docs, origins


def read_paths(paths) -> tuple[list, list]:
    """All documents of all paths, with an origin ("file:line (document n)") for each."""
    docs, origins = [], []
    for path in paths:
        for file in manifest_files(path):
            d, o = read_documents(file)
            docs.extend(d)
            origins.extend(o)
    return docs, origins
