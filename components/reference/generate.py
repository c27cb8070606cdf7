"""`python -m components.reference.generate --from ../shared/reference/karpenter-versions --out DIR`
(`make reference`): the project's own per-version Karpenter data, generated from upstream files.

For every `<version>/` folder it checks each file against the sha256 in its VERSION.txt, then
writes `<version>.json`: controller IAM policies and the node role from the getting-started
`cloudformation.yaml` (placeholders `${AWS::Partition}`, `${ClusterName}`, ... kept; filled in at
render time), the interruption queue, its policy and the EventBridge rules, both charts' default
values, the enum values of every CRD, and the provenance (upstream repository, commit, path, blob, sha256) of every input.
The served `openAPIV3Schema` (descriptions dropped) and CEL rules of every CRD go to
`kubefacts/validation/crds/<version>.json` (`--crds-out`): the one validator of Karpenter objects
(kubefacts.validation) reads them there, in the config and in the provisioner's wheel alike.
Adding a release: put its upstream files under the source folder, run this, update the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from kubefacts.validation.crds import DATA_DIR as CRDS_DIR

from .cfn import as_placeholders, load_template

GENERATOR = "components.reference.generate"
_FILE_LINE = re.compile(
    r"^(?P<local>\S+) <- (?P<repo>[^@\s]+)@(?P<commit>[0-9a-f]{40}):(?P<path>\S+) .*\| blob (?P<blob>[0-9a-f]{40}) "
    r"\| sha256 (?P<sha256>[0-9a-f]{64}) \| (?P<bytes>\d+)$")


class ReferenceError(Exception):
    """The upstream folder is not what VERSION.txt says (or not a Karpenter release folder)."""


def parse_version_txt(text: str) -> dict[str, Any]:
    """Tag, tag commit and date, and per local file its upstream origin and digest."""
    header: dict[str, Any] = {}
    files: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if line.startswith("tag: "):
            header["tag"] = line.split()[1]
        elif line.startswith("tag commit: "):
            header["tagCommit"] = line.split()[2]
        elif line.startswith("tag commit date (committer): "):
            header["tagDate"] = line.rsplit(" ", 1)[1]
        elif match := _FILE_LINE.match(line.strip()):
            group = match.groupdict()
            files[group.pop("local")] = {**group, "bytes": int(group["bytes"])}
    if "tag" not in header or not files:
        raise ReferenceError("VERSION.txt names no tag or no files")
    return {**header, "files": files}


def _checked(folder: Path, provenance: dict[str, Any]) -> dict[str, bytes]:
    contents: dict[str, bytes] = {}
    for local, origin in provenance["files"].items():
        data = (folder / local).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != origin["sha256"]:
            raise ReferenceError(f"{folder / local}: sha256 {digest} differs from VERSION.txt's {origin['sha256']}")
        contents[local] = data
    return contents


def _strip_descriptions(node: Any) -> Any:
    """Descriptions are documentation, not contract; dropping them keeps the data small. Only the
    `description` keyword of a schema is dropped, never a property that happens to be called so."""
    if isinstance(node, list):
        return [_strip_descriptions(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "description" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_descriptions(value)
    return out


def schema_enums(schema: dict[str, Any], path: str = "") -> dict[str, list[Any]]:
    """Every enum under a served schema by dotted path (`[]` for list items, `*` for map values)."""
    found: dict[str, list[Any]] = {}
    if "enum" in schema:
        found[path] = list(schema["enum"])
    for name, sub in (schema.get("properties") or {}).items():
        found.update(schema_enums(sub, f"{path}.{name}" if path else name))
    if isinstance(schema.get("items"), dict):
        found.update(schema_enums(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        found.update(schema_enums(schema["additionalProperties"], f"{path}.*"))
    return found


def _crd(data: bytes) -> dict[str, Any]:
    crd = yaml.safe_load(data)
    spec = crd["spec"]
    return {
        "group": spec["group"],
        "kind": spec["names"]["kind"],
        "plural": spec["names"]["plural"],
        "scope": spec["scope"],
        "versions": [
            {"name": v["name"], "served": True, "storage": bool(v.get("storage")),
             "schema": _strip_descriptions(v["schema"]["openAPIV3Schema"])}
            for v in spec["versions"] if v.get("served")
        ],
    }


def _iam_and_interruption(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = template["Resources"]
    policies = []
    node_role: dict[str, Any] | None = None
    queue: dict[str, Any] | None = None
    queue_policy: dict[str, Any] | None = None
    rules = []
    for logical_id, resource in resources.items():
        kind, props = resource["Type"], resource.get("Properties") or {}
        if kind == "AWS::IAM::ManagedPolicy":
            doc = as_placeholders(props["PolicyDocument"])
            policies.append({"key": logical_id.removesuffix("Policy"), "name": as_placeholders(props["ManagedPolicyName"]),
                             "version": doc["Version"], "statements": doc["Statement"]})
        elif kind == "AWS::IAM::Role" and logical_id == "KarpenterNodeRole":
            arns = as_placeholders(props["ManagedPolicyArns"])
            prefix = "arn:${AWS::Partition}:iam::aws:policy/"
            if not all(a.startswith(prefix) for a in arns):
                raise ReferenceError(f"node role policy outside AWS's managed policies: {arns}")
            node_role = {"name": as_placeholders(props["RoleName"]), "path": props.get("Path", "/"),
                         "trust": as_placeholders(props["AssumeRolePolicyDocument"]),
                         "managedPolicies": [a.removeprefix(prefix) for a in arns]}
        elif kind == "AWS::SQS::Queue":
            queue = {"name": as_placeholders(props["QueueName"]),
                     "messageRetentionPeriod": props.get("MessageRetentionPeriod"),
                     "sqsManagedSseEnabled": props.get("SqsManagedSseEnabled")}
        elif kind == "AWS::SQS::QueuePolicy":
            queue_policy = as_placeholders(props["PolicyDocument"])
        elif kind == "AWS::Events::Rule":
            rules.append({"logicalId": logical_id, "eventPattern": props["EventPattern"],
                          "targetId": props["Targets"][0]["Id"]})
    if node_role is None or queue is None or queue_policy is None or not policies:
        raise ReferenceError("cloudformation.yaml lacks the node role, the queue, its policy or the controller policies")
    return ({"controllerPolicies": policies, "nodeRole": node_role},
            {"queue": queue, "queuePolicy": queue_policy, "rules": rules})


def generate_version(folder: Path) -> dict[str, Any]:
    """The data of one release folder (see the module doc)."""
    provenance = parse_version_txt((folder / "VERSION.txt").read_text())
    contents = _checked(folder, provenance)
    version = provenance["tag"].removeprefix("v")
    if version != folder.name:
        raise ReferenceError(f"{folder}: VERSION.txt names tag {provenance['tag']}")
    iam, interruption = _iam_and_interruption(load_template(contents["cloudformation.yaml"].decode()))
    crds = {Path(local).stem: _crd(data) for local, data in sorted(contents.items()) if local.startswith("crds/")}
    enums = {}
    for stem, crd in crds.items():
        for served in crd["versions"]:
            for path, values in schema_enums(served["schema"]).items():
                enums[f"{stem}:{path}"] = values
    return {
        "version": version,
        "generator": GENERATOR,
        "provenance": provenance,
        "iam": iam,
        "interruption": interruption,
        "charts": {
            "karpenter": {"defaults": yaml.safe_load(contents["chart-values.yaml"]) or {}},
            "karpenter-crd": {"defaults": yaml.safe_load(contents["crd-chart-values.yaml"]) or {}},
        },
        "crds": crds,
        "enums": dict(sorted(enums.items())),
    }


def dumps(data: dict[str, Any]) -> str:
    # One key per line (indent 1): diffs between releases stay readable in review.
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def generate(source: Path, out: Path, crds_out: Path = CRDS_DIR) -> list[Path]:
    """Write `<version>.json` for every release folder of `source`, and `index.json`; each
    release's served CRD schemas go to `crds_out/<version>.json` instead (the kernel's validator
    reads them there: kubefacts.validation, shipped in the provisioner's wheel too)."""
    folders = sorted((p for p in source.iterdir() if (p / "VERSION.txt").is_file()),
                     key=lambda p: tuple(int(x) for x in p.name.split(".")))
    if not folders:
        raise ReferenceError(f"{source}: no <version>/VERSION.txt folders")
    out.mkdir(parents=True, exist_ok=True)
    crds_out.mkdir(parents=True, exist_ok=True)
    written = []
    for folder in folders:
        data = generate_version(folder)
        crds_path = crds_out / f"{folder.name}.json"
        crds_path.write_text(dumps(data.pop("crds")))
        path = out / f"{folder.name}.json"
        path.write_text(dumps(data))
        written += [path, crds_path]
    index = out / "index.json"
    index.write_text(dumps({"generator": GENERATOR, "versions": [f.name for f in folders]}))
    return [*written, index]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {GENERATOR}", description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="folder of <version>/ upstream files")
    parser.add_argument("--out", type=Path, required=True, help="data folder to write")
    parser.add_argument("--crds-out", type=Path, default=CRDS_DIR,
                        help=f"folder to write each release's CRD schemas into (default {CRDS_DIR})")
    args = parser.parse_args(argv)
    try:
        written = generate(args.source, args.out, args.crds_out)
    except (OSError, ReferenceError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    total = sum(p.stat().st_size for p in written)
    print(f"Wrote {len(written)} files ({total:,} bytes) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
