"""`python -m policies.docs > docs/policies.md`: the policy reference, generated from the pack
itself (names, rationale, levels per environment, config) so it cannot drift."""

from __future__ import annotations

import json
import sys

from . import levels
from .pack import ALL

INTRO = """# Policy pack

`policies/` is a Pulumi CrossGuard policy pack. It judges what a stack declares, before it
reaches a cluster: a NodePool that could buy unbounded capacity, a node that leaks its role's
credentials to pods, a controller policy with a wildcard, a Karpenter install whose CRDs one
`helm uninstall` would delete. It runs two ways, with the same code and the same verdicts:

- **Offline, no CLI, no credentials** (CI and every developer): `make render STACK=<stack>`
  renders the program under the SDK's mock monitor, then runs
  `.venv/bin/python -m policies.check build/<stack>`, which reads `build/<stack>/resources.json`,
  writes `build/<stack>/policy-report.json` (a JSON list of `{"policy", "resource", "level",
  "message"}`; `resource` is the URN), prints the violations and exits **3** when a mandatory
  policy is violated, **0** otherwise, **2** when the build folder or the config cannot be read.
  Make stops there; GNU make itself exits 2 on any failed recipe, so the recipe names the
  command's own code on stderr (`make render: .venv/bin/python -m policies.check build/dev exited 3 ...`);
  a CI gate that needs 3 itself runs the two commands directly.
- **At preview** (with the Pulumi CLI): `make preview STACK=<stack>`, i.e.
  `pulumi preview --stack <stack> --policy-pack policies`. A mandatory violation fails the
  preview (and `pulumi up`); advisory ones are printed as warnings. `policies/PulumiPolicy.yaml`
  runs the pack in the project's virtualenv (`../.venv`), so it imports the same provisioner
  package and catalog as the offline check. Every IAM document (controller and trust policies,
  the queue policy) and the access entry's principal are built from partition, account, region
  and names, never from a resource's outputs, so the IAM policies judge them at preview too.
- **As a preview sees it, no CLI**: `.venv/bin/python -m offline.render <stack> --preview`
  renders the program as `pulumi preview` does (attributes a provider computes on create written
  as `[unknown]`) into `build/<stack>-preview/`, then runs `policies.check` over it (which reads
  `[unknown]` as not known yet); tests show the IAM documents are all known there for every
  shipped stack.

Every policy is a pure function over a neutral view of the stack (`policies/model.py`: resources
with type, name, URN, props and options, plus the environment). `policies/crossguard.py` adapts
the analyzer's `StackValidationArgs` to that view, `policies/check.py` adapts `resources.json`;
`policies/__main__.py` only constructs the `PolicyPack` (constructing it starts the analyzer's
gRPC server). All policies are stack validation policies: most need more than one resource
(the node role and its access entry, the Odigos release and every NodePool) or the environment.
"""

LEVELS_TEXT = """## Levels per environment

The environment is the stack's `karpenter-platform:environment` (the stack name when unset): the
offline check reads it from `outputs.json` (`environment`), the pack from the variables the CLI
gives a policy pack process (`PULUMI_CONFIG`, then `PULUMI_STACK`). An environment without a row
(a new stack) gets the **default** row: prod's levels and dev's ceilings, the strictest of each,
until someone adds a row to `policies/levels.py`. `disabled` means the policy does not run.
"""

CONFIG_TEXT = """## Changing levels and settings for one run

Both ways take the same JSON document, keyed by policy name; `all` sets every policy's level
first, a policy's own entry wins:

```json
{
  "all": "advisory",
  "nodepool-limits-within-ceiling": {"enforcementLevel": "mandatory", "ceilings": {"cpu": "256", "memory": "1Ti"}},
  "nodeclass-ami-pinned": "disabled"
}
```

- Preview: `pulumi preview --stack prod --policy-pack policies --policy-pack-config my-policy-config.json`
  (the CLI validates the file against each policy's config schema).
- Offline: `.venv/bin/python -m policies.check build/prod --config my-policy-config.json`
  (validated against the same schemas; a bad file exits 2). `--environment dev` judges a render as
  another environment (levels and ceilings), e.g. to see what prod would say about a dev render.

Properties a policy's entry may set (besides `enforcementLevel`), with their defaults:
"""

BEHAVIOUR_TEXT = """## What the policies read, and what they do not judge

- **Values not known yet** (during `pulumi preview`, an output of a resource still to be
  created, such as a role ARN) are never violations: the adapter turns the analyzer's unknowns
  into `UNKNOWN` and every policy treats it as "cannot judge yet". Where the analyzer gives
  property dependencies, a policy follows an unknown ARN to the resource it comes from (the
  access entry's principal to its role, an event target's ARN to its queue). A test makes each
  top-level and second-level value (and each key of a NodePool's template) of the dev and prod
  renders unknown, one at a time, and checks that no violation appears.
- **A broken policy fails closed**: an exception inside a policy is reported as a violation of
  that policy ("could not run: ...") at its level, never silently passed.
- **Instance types** come from the provisioner package (issue #6): its shipped catalog
  (`provisioner/data/ec2-instance-types.json`, a copy of the shared EC2 facts), its loader (so a
  NodePool Karpenter would reject is reported as such) and its instance selection, so the pack and
  `make simulate` agree on which types a pool can get and what each can allocate (Karpenter's
  kube-reserved, system-reserved, eviction threshold and VM overhead; kubelet settings of the
  pool's EC2NodeClass when the stack declares it). DaemonSet overhead is not subtracted (the
  stack does not know the cluster's DaemonSets; `make simulate` does). Offline there is no
  per-zone availability: offerings are assumed in every zone the pool names, so "no zone has
  this type" is not claimed. Types without an on-demand price in the catalog have no offering,
  as in the simulator.
- **The pinned Karpenter release judges**: NodePools and EC2NodeClasses are judged whole by
  `kubefacts.validation` (CRD schema, CEL rules, Karpenter's runtime and label checks) of the
  release the stack pins (the `karpenter` Helm release's chart version; the newest supported when
  the stack declares none), as the render's checks do: a requirement on
  `karpenter.k8s.aws/placement-group-id` is refused in a stack pinned at 1.10.2, accepted from 1.11.3.
- **Team facts on NodePools**: the spot and largest-pod policies read two annotations on the
  NodePool (`metadata.annotations`), so both ways judge the same declared object:
  `karpenter-platform.io/allow-spot: "true" | "false"` (the team's `allowSpot`) and
  `karpenter-platform.io/largest-pod: '{"cpu": "32", "memory": "120Gi", "nvidia.com/gpu": "4"}'`
  (the pool's `largestPod`, JSON). A pool without them is not judged by those two policies.
- **retainOnDelete is not visible at preview**: the analyzer protocol carries `protect` but not
  `retainOnDelete`, so at preview `helm-crds-protected` cannot tell whether the CRD release is
  retained and does not report missing deletion protection there; the offline check sees both
  options and does. The `helm.sh/resource-policy: keep` annotation and `skipCrds` are judged
  both ways.
- **Discovery**: a stack that tags nothing with `karpenter.sh/discovery` leaves discovery to
  another stack and is not judged; tags whose resource id is not known yet are not counted.
- **Node role**: the node role is the principal of the stack's `EC2_LINUX` access entry (or
  `EC2_WINDOWS`, with a Windows node class) and, for PassRole, any role the stack creates that
  EC2 may assume. A stack that declares neither
  manages node identity elsewhere; then only wildcard PassRole resources are judged.

## Adding a policy

Write a function `(stack, config) -> Iterable[Violation]` in the module of its area, decorate it
with `@policy(name, description, schema=..., defaults=...)`, add its row to
`policies/levels.py`, add a passing and a failing test under `tests/policies/` (built with
`tests/policies/analyzer.py`, which builds the analyzer's arguments the way pulumi_policy does),
then regenerate this page: `.venv/bin/python -m policies.docs > docs/policies.md`
(`tests/policies/test_docs.py` fails while it is stale).
"""


def _levels_table() -> list[str]:
    lines = ["| Policy | Area | dev | staging | prod | default |", "|---|---|---|---|---|---|"]
    for policy in ALL:
        row = [levels.default_level(policy.name, env) for env in (*levels.ENVIRONMENTS, None)]
        lines.append(f"| [`{policy.name}`](#{policy.name}) | {policy.group} | " + " | ".join(row) + " |")
    return lines


def _config_lines() -> list[str]:
    lines = []
    for policy in ALL:
        if not policy.schema:
            continue
        lines.append(f"- `{policy.name}`:")
        for key, spec in policy.schema.items():
            defaults = {env: policy.defaults(env).get(key) for env in (*levels.ENVIRONMENTS, None)}
            values = {json.dumps(v, sort_keys=True) for v in defaults.values()}
            if len(values) == 1:
                shown = f"default `{values.pop()}`"
            else:
                shown = "defaults " + ", ".join(f"{env or 'default'} `{json.dumps(v, sort_keys=True)}`"
                                                for env, v in defaults.items())
            lines.append(f"  - `{key}`: {spec.get('description', '')} ({shown})")
    return lines


def render() -> str:
    out = [INTRO, "## Policies", ""]
    for policy in ALL:
        row = ", ".join(f"{env} **{levels.default_level(policy.name, env)}**" for env in levels.ENVIRONMENTS)
        out += [f"### `{policy.name}`", "", policy.description, "", f"{policy.group}. Levels: {row}.", ""]
    out += [LEVELS_TEXT, *_levels_table(), "", CONFIG_TEXT, *_config_lines(), "", BEHAVIOUR_TEXT]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
