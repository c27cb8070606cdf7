"""`python -m offline.tune -f build/<stack>/manifests -f WORKLOADS [provisioner tune's options]`:
`provisioner tune` with every candidate change checked against the policy pack before it is kept
or printed.

The provisioner searches and never imports policies; this shell passes it the check as `accept`:
a pool's change set is refused when the pool with it fails a NodePool policy that is mandatory in
any environment (dev, staging, prod) and does not fail it as it is (policies.advice). Plain
`provisioner tune` already keeps a pool's declared largest pod (`nodepool-fits-largest-pod`'s
rule, one function for both); this veto adds every other NodePool policy. Exit codes as
`provisioner tune` (0, 2 for bad input).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from policies.advice import refusals, resources_from_objects
from provisioner import EXIT_INVALID_INPUT, InputError, build_parser, read_paths, replace_requirements


def policy_accept(objects: list[Any]) -> Callable[[str, list[dict]], bool]:
    """The veto tune calls with a NodePool name and its change set."""
    pools, classes = resources_from_objects(objects)

    def accept(nodepool: str, changes: list[dict]) -> bool:
        pool = pools.get(nodepool)
        if pool is None:  # not a rendered NodePool: nothing to judge it by
            return True
        own = (((pool.props.get("spec") or {}).get("template") or {}).get("spec") or {}).get("requirements") or []
        class_name = ((((pool.props.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}).get("name")
        return not refusals(pool, [c for c in classes if c.name == class_name], replace_requirements(own, changes))

    return accept


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen={"tune"})
    for action in parser._subparsers._group_actions:  # the usage line names this command
        action.choices["tune"].prog = "python -m offline.tune"
    args = parser.parse_args(["tune", *argv])
    try:
        objects, _ = read_paths(args.paths)
        args.accept = policy_accept(objects)
        return args.run(args) or 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID_INPUT


if __name__ == "__main__":
    sys.exit(main())
