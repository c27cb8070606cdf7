"""Per-type facts the shared catalog lacks, from Karpenter's generated instance-type docs.

aws/karpenter-provider-aws computes, per instance type, extended resources (types.go
`computeCapacity`: `vpc.amazonaws.com/pod-eni` = the VPC resource controller's branch interfaces of
trunking-capable types, `vpc.amazonaws.com/efa` = EFA interfaces, `aws.amazon.com/neuron` and
`aws.amazon.com/neuroncore` from NeuronInfo) and labels from DescribeInstanceTypes that the shared
catalog does not carry (sustained clock speed, EBS bandwidth, encryption in transit). Its
generated docs list them per type; `data/ec2-extended-resources.json` holds them, regenerated with
`python -m provisioner.catalog.extended DOCS.md... > provisioner/data/ec2-extended-resources.json`.
"""
from __future__ import annotations

import json
import re
import sys

EXTENDED = "data/ec2-extended-resources.json"
RESOURCES = ("vpc.amazonaws.com/pod-eni", "vpc.amazonaws.com/efa", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore",
             "habana.ai/gaudi")
LABELS = ("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-ebs-bandwidth",
          "karpenter.k8s.aws/instance-encryption-in-transit-supported")
_TYPE = re.compile(r"^### `([^`]+)`\s*$")
_ROW = re.compile(r"^\s*\|([^|]+)\|([^|]*)\|\s*$")


def parse_docs(text: str) -> dict:
    """{type: {"resources": {name: count}, "labels": {key: value}}} from one instance-types.md."""
    out: dict = {}
    current = None
    for line in text.splitlines():
        match = _TYPE.match(line)
        if match:
            current = out.setdefault(match.group(1), {"resources": {}, "labels": {}})
            continue
        row = _ROW.match(line)
        if current is None or not row:
            continue
        key, value = row.group(1).strip(), row.group(2).strip()
        if key in RESOURCES and value.isdigit() and int(value):
            current["resources"][key] = int(value)
        elif key in LABELS and value:
            current["labels"][key] = value
    return out


def merge(documents: list) -> dict:
    """Newest docs first: a type takes the first document that lists it."""
    merged: dict = {}
    for doc in documents:
        for name, facts in doc.items():
            merged.setdefault(name, facts)
    return {name: merged[name] for name in sorted(merged)}


def main(argv=None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    docs = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            docs.append(parse_docs(handle.read()))
    json.dump({"source": paths, "types": merge(docs)}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
