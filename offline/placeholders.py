"""Clearly labelled placeholder answers for data sources and provider-computed attributes.

Nothing here is read from AWS: a render shows what the program would declare, with these
values standing in for what only a real account knows. Every value says PLACEHOLDER or uses
the documentation account id 123456789012.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi

ACCOUNT_ID = "123456789012"
PARTITION = "aws"
VPC_ID = "vpc-0placeholder00000"
CLUSTER_SECURITY_GROUP_ID = "sg-0placeholdercluster"
OIDC_ID = "PLACEHOLDER0123456789ABCDEF0123456"
CA_DATA = "UExBQ0VIT0xERVItQ0EtREFUQQ=="  # base64("PLACEHOLDER-CA-DATA")
TAGGED_SUBNETS = ["subnet-0placeholder00001", "subnet-0placeholder00002", "subnet-0placeholder00003"]


def endpoint(cluster: str, region: str) -> str:
    return f"https://PLACEHOLDER-{cluster}.gr7.{region}.eks.amazonaws.com"


def oidc_issuer(region: str) -> str:
    return f"https://oidc.eks.{region}.amazonaws.com/id/{OIDC_ID}"


def stack_reference_outputs(reference: str) -> dict[str, Any]:
    """Outputs of a referenced stack: its cluster name is `<project>-<stack>` of the reference."""
    parts = reference.split("/")
    return {"clusterName": f"{parts[-2]}-{parts[-1]}" if len(parts) >= 2 else reference}


def _service_of(type_token: str) -> str:
    # aws:iam/role:Role -> iam
    return type_token.split(":")[1].split("/")[0]


class PlaceholderMocks(pulumi.runtime.Mocks):
    """Answers data sources and fills computed attributes the way AWS would shape them.

    With `preview=True` they answer as the engine does during `pulumi preview`: data sources
    and reads (a StackReference) are answered, but a resource still to be created has no id and
    no computed attribute yet, only its inputs, so whatever the program derives from an ARN,
    URL or digest stays unknown. `calls` records each data source's token, `call_args` each call
    as (token, args)."""

    def __init__(self, region: str, preview: bool = False):
        self.region = region
        self.preview = preview
        self.calls: list[str] = []
        self.call_args: list[tuple[str, dict[str, Any]]] = []

    # The SDK's MockMonitor.Invoke takes a plain dict too (no check failures), as these answers are.
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        token, inputs = args.token, args.args
        self.calls.append(token)
        self.call_args.append((token, dict(inputs)))
        region = inputs.get("region") or self.region
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/PLACEHOLDER", "userId": "PLACEHOLDER", "id": ACCOUNT_ID}
        if token == "aws:index/getPartition:getPartition":
            return {"partition": PARTITION, "dnsSuffix": "amazonaws.com", "id": PARTITION, "reverseDnsPrefix": "com.amazonaws"}
        if token == "aws:index/getRegion:getRegion":
            return {"name": region, "region": region, "id": region, "endpoint": f"ec2.{region}.amazonaws.com", "description": "PLACEHOLDER"}
        if token == "aws:eks/getCluster:getCluster":
            name = inputs["name"]
            return {
                "id": name, "name": name, "arn": f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{name}",
                "endpoint": endpoint(name, region), "version": "1.34", "status": "ACTIVE",
                "certificateAuthorities": [{"data": CA_DATA}],
                "identities": [{"oidcs": [{"issuer": oidc_issuer(region)}]}],
                "vpcConfig": {"clusterSecurityGroupId": CLUSTER_SECURITY_GROUP_ID, "vpcId": VPC_ID,
                              "subnetIds": TAGGED_SUBNETS, "securityGroupIds": [], "endpointPrivateAccess": True,
                              "endpointPublicAccess": True, "publicAccessCidrs": []},
                "accessConfigs": [{"authenticationMode": "API_AND_CONFIG_MAP"}],
                "tags": {},
            }
        if token == "aws:ec2/getSubnets:getSubnets":
            return {"ids": TAGGED_SUBNETS, "id": region}
        if token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
            return {"userName": "AWS", "password": "PLACEHOLDER-ECR-TOKEN", "authorizationToken": "PLACEHOLDER",
                    "proxyEndpoint": f"https://{ACCOUNT_ID}.dkr.ecr.{region}.amazonaws.com", "id": region,
                    "expiresAt": "2099-01-01T00:00:00Z"}
        raise NotImplementedError(f"offline render has no placeholder for data source {token}; add one in offline/placeholders.py")

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.custom is False:  # a component; reads (e.g. StackReference) leave custom unset
            return None, {}
        typ, name, inputs = args.typ, args.name, dict(args.inputs)
        if typ == "pulumi:pulumi:StackReference":
            return inputs.get("name", name), {"name": inputs.get("name", name), "outputs": stack_reference_outputs(inputs.get("name", name)), "secretOutputNames": []}
        if self.preview:
            # A create in a preview: the provider echoes the inputs; id and outputs come later.
            return "", inputs
        state = dict(inputs)
        physical = inputs.get("name") if isinstance(inputs.get("name"), str) else name
        if typ.startswith("aws:"):
            service = _service_of(typ)
            if service == "iam":
                kind = {"role": "role", "policy": "policy", "instanceProfile": "instance-profile"}.get(typ.split("/")[1].split(":")[0], "resource")
                state.setdefault("arn", f"arn:aws:iam::{ACCOUNT_ID}:{kind}/{physical}")
                state.setdefault("uniqueId", "AROAPLACEHOLDER")
            elif service == "sqs" and typ.endswith(":Queue"):
                state.setdefault("arn", f"arn:aws:sqs:{self.region}:{ACCOUNT_ID}:{physical}")
                state.setdefault("url", f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT_ID}/{physical}")
            elif service == "ecr" and typ.endswith(":Repository"):
                state.setdefault("repositoryUrl", f"{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com/{physical}")
                state.setdefault("arn", f"arn:aws:ecr:{self.region}:{ACCOUNT_ID}:repository/{physical}")
            else:
                state.setdefault("arn", f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{physical}")
            state.setdefault("name", physical)
            return f"{physical}-PLACEHOLDER-ID", state
        if typ.startswith("docker-build:"):
            digest = "sha256:" + hashlib.sha256(repr(sorted(inputs.items(), key=str)).encode()).hexdigest()
            state.setdefault("digest", digest)
            state.setdefault("ref", f"PLACEHOLDER-REGISTRY/{name}@{digest}")
            return f"{name}-PLACEHOLDER-ID", state
        return f"{name}-PLACEHOLDER-ID", state
