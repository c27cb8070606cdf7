"""`python -m bench.validation [--claims N]`: what judging Karpenter objects costs
(kubefacts.validation: CRD schema, CEL by cel-python, runtime checks). Prints one row per case:
every Karpenter object of ../shared/realworld2/corpus and import_corpus/examples-v1 (cold: the
first call compiles schemas and CEL programs; warm: a second process-local pass, cached by
content), and a cluster dump of N NodeClaims that differ by name and node (the per-rule memo)."""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

from kubefacts.validation import is_karpenter_object, validate
from kubefacts.yamlread import UnsafeInput, load_yaml_files

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def corpus(shared: Path) -> list[dict]:
    found: list[dict] = []
    for folder in (shared / "realworld2" / "corpus", shared / "import_corpus" / "examples-v1"):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            try:
                found += [d.value for d in load_yaml_files(path, str(path)) if is_karpenter_object(d.value)]
            except UnsafeInput:
                continue
    return found


def claims(count: int) -> list[dict]:
    base = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                                      {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                       "values": ["m5.large", "m5.xlarge"]},
                                      {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]},
            "status": {"providerID": "aws:///us-east-1a/i-0", "nodeName": "n"}}
    out = []
    for i in range(count):
        claim = copy.deepcopy(base)
        claim["metadata"]["name"], claim["status"]["nodeName"] = f"default-{i:05d}", f"ip-10-0-{i // 250}-{i % 250}"
        out.append(claim)
    return out


def timed(objects: list[dict]) -> tuple[float, int]:
    start = time.perf_counter()
    refused = sum(bool(validate(o)) for o in objects)
    return time.perf_counter() - start, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validation", description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--shared", type=Path, default=SHARED)
    args = parser.parse_args(argv)
    print(f"{'case':<40} {'objects':>8} {'refused':>8} {'seconds':>8} {'ms/object':>10}")
    rows = []
    objects = corpus(args.shared) if args.shared.is_dir() else []
    if objects:
        rows += [("real corpus, cold", objects), ("real corpus, warm", objects)]
    rows.append((f"{args.claims} NodeClaims of one pool", claims(args.claims)))
    for name, batch in rows:
        seconds, refused = timed(batch)
        print(f"{name:<40} {len(batch):>8} {refused:>8} {seconds:>8.2f} {1000 * seconds / len(batch):>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
