"""CrossGuard entry point, run by `pulumi preview --policy-pack policies`.

Only constructs the PolicyPack: constructing it starts the analyzer's gRPC server and blocks
until the engine is done. The policies live in importable modules (policies.pack).
"""

import sys
from pathlib import Path

# The CLI runs this folder as a script (sys.path[0] is policies/); import the pack as a package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import Policy, PolicyPack  # noqa: E402

from policies.crossguard import DESCRIPTION, PACK_NAME, build_policies, environment_from_env  # noqa: E402

policies: list[Policy] = list(build_policies(environment_from_env()))  # PolicyPack takes the base class
PolicyPack(name=PACK_NAME, policies=policies, description=DESCRIPTION)
