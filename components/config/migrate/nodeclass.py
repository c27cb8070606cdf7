"""AWSNodeTemplate (karpenter.k8s.aws/v1alpha1, or a Provisioner's inline `spec.provider`) and
EC2NodeClass (karpenter.k8s.aws/v1beta1) to a karpenter.k8s.aws/v1 EC2NodeClass.

Mirrors, in order: aws/karpenter-provider-aws tools/karpenter-convert pkg/convert/convert.go
`convertNodeTemplate` (AMI family defaulted to AL2, the node role placeholder, `launchTemplate`
refused) with pkg/utils/nodeclass/nodeclass.go `New` and `NewSubnetSelectorTerms` /
`NewSecurityGroupSelectorTerms` / `NewAMISelectorTerms` (v0.32: comma lists and `aws-ids`,
`aws::ids`, `aws::name`, `aws::owners` keys become terms), then pkg/apis/v1/ec2nodeclass_conversion.go
`ConvertFrom` (v1.0: an alias family without amiSelectorTerms becomes `<family>@latest`; Ubuntu becomes
AL2 with Ubuntu's root volume; anything else Custom)."""

from __future__ import annotations

import copy
from typing import Any

from ..imports import Document
from .common import (ALIAS_FAMILIES, GUIDE, NODE_ROLE_PLACEHOLDER, NODECLASS_V1, V1BETA1_GUIDE, Log, mapping,
                     object_metadata, unknown_keys)

V1ALPHA1_KEYS = ("amiFamily", "context", "instanceProfile", "subnetSelector", "securityGroupSelector", "tags",
                 "launchTemplate", "metadataOptions", "blockDeviceMappings", "userData", "amiSelector",
                 "detailedMonitoring")
# The inline provider is the AWS struct (pkg/apis/v1alpha1/provider.go) with its own TypeMeta.
PROVIDER_KEYS = ("apiVersion", "kind", "amiFamily", "context", "instanceProfile", "subnetSelector",
                 "securityGroupSelector", "tags", "launchTemplate", "metadataOptions", "blockDeviceMappings")
_COPIED = ("context", "tags", "metadataOptions", "blockDeviceMappings", "userData", "detailedMonitoring")
_SELECTORS = {
    "subnetSelector": ("subnetSelectorTerms", {"aws-ids": "id", "aws::ids": "id"}),
    "securityGroupSelector": ("securityGroupSelectorTerms", {"aws-ids": "id", "aws::ids": "id"}),
    "amiSelector": ("amiSelectorTerms", {"aws-ids": "id", "aws::ids": "id", "aws::name": "name", "aws::owners": "owner"}),
}
# ec2nodeclass_conversion.go: Ubuntu's default root volume, injected when the class declared none.
UBUNTU_ROOT = [{"deviceName": "/dev/sda1", "rootVolume": True,
                "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"}}]
MANAGED_BY_TAG = "karpenter.sh/managed-by"
DISCOVERY_TAG, CLUSTER_PLACEHOLDER = "karpenter.sh/discovery", "$CLUSTER_NAME"


def selector_terms(selector: Any, doc: Document, path: str, special: dict[str, str], log: Log) -> list[dict] | None:
    """A v1alpha1 selector map as selector terms (nodeclass.go `New...SelectorTerms`): each
    comma-separated value is one alternative; special keys become `id`/`name`/`owner` terms."""
    if not isinstance(selector, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items()):
        log.error(doc, path, "expected a mapping of tag keys (or aws-ids, aws::ids, aws::name, aws::owners) to strings")
        return None
    fields: dict[str, list[str]] = {"id": [""], "name": [""], "owner": [""]}
    tag_sets: list[dict[str, str]] = [{}]
    for key in sorted(selector):
        parts = [part.strip() for part in selector[key].split(",")]
        if key in special:
            fields[special[key]] = parts
        else:
            tag_sets = [{**tags, key: part} for part in parts for tags in tag_sets]
    if fields["id"] != [""] and tag_sets != [{}]:
        # A v1 term with an id takes no other field (the CRD's rule), so ids and tags cannot be ANDed.
        log.lost(doc, path, f"tags {sorted(k for k in selector if k not in special)} not carried: a v1 selector term "
                            "with an id takes no other field; the ids alone select the same resources if they carry "
                            "those tags: check them")
        tag_sets = [{}]
    terms = []
    for owner in fields["owner"]:
        for ident in fields["id"]:
            for name in fields["name"]:
                for tags in tag_sets:
                    term: dict[str, str | dict[str, str]] = {
                        k: v for k, v in (("id", ident), ("name", name), ("owner", owner)) if v}
                    if tags:
                        term["tags"] = tags
                    terms.append(term)
    return terms


def from_v1alpha1(doc: Document, spec: Any, path: str, name: str, log: Log, *, inline: bool) -> dict[str, Any] | None:
    """The v1 EC2NodeClass for an AWSNodeTemplate spec (or an inline provider at `path`)."""
    spec = mapping(spec, doc, path, log)
    if spec is None:
        return None
    unknown_keys(spec, PROVIDER_KEYS if inline else V1ALPHA1_KEYS, doc, path,
                 "karpenter.sh/v1alpha5 Provisioner spec.provider" if inline else "karpenter.k8s.aws/v1alpha1 AWSNodeTemplate", log)
    out: dict[str, Any] = {}
    family = spec.get("amiFamily")
    if family is None:
        family = "AL2"
        log.changed(doc, f"{path}.amiFamily", "absent: v1alpha1 defaulted to AL2, written as AL2 (karpenter-convert "
                                              f"convertNodeTemplate; {V1BETA1_GUIDE}, \"AMIFamily\")")
    for key, (target, special) in _SELECTORS.items():
        if key in spec:
            terms = selector_terms(spec[key], doc, f"{path}.{key}", special, log)
            if terms is not None:
                out[target] = terms
                log.changed(doc, f"{path}.{key}", f"written as {target}: {terms} ({V1BETA1_GUIDE}, "
                                                  "\"SubnetSelector, SecurityGroupSelector, and AMISelector\")")
    for key in ("subnetSelector", "securityGroupSelector"):
        target = _SELECTORS[key][0]
        if target not in out:
            out[target] = [{"tags": {DISCOVERY_TAG: CLUSTER_PLACEHOLDER}}]
            log.changed(doc, f"{path}.{key}", f"absent (early releases found them by the cluster's tags): written as "
                        f"{target}: [{{tags: {{{DISCOVERY_TAG}: {CLUSTER_PLACEHOLDER}}}}}], the getting-started "
                        "discovery tag (v1 requires the terms); the platform uses the stack's subnets and security group")
    for key in _COPIED:
        if key in spec:
            out[key] = copy.deepcopy(spec[key])
    tags = out.get("tags")
    if isinstance(tags, dict) and MANAGED_BY_TAG in tags:
        del tags[MANAGED_BY_TAG]
        log.changed(doc, f"{path}.tags.{MANAGED_BY_TAG}", f"dropped: Karpenter v1 removed this tag and tags instances "
                                                           f"with eks:eks-cluster-name itself ({GUIDE})")
    out["role"] = NODE_ROLE_PLACEHOLDER
    profile = spec.get("instanceProfile")
    if profile is not None:
        log.changed(doc, f"{path}.instanceProfile", f"{profile!r} replaced by a node role: v1beta1 moved to spec.role and "
                    f"Karpenter creates the instance profile (karpenter-convert writes role: {NODE_ROLE_PLACEHOLDER}); "
                    "the stack's node role (with its access entry) is used. To keep the old role, find it with `aws iam "
                    f"get-instance-profile --instance-profile-name {profile} --query 'InstanceProfile.Roles[0].RoleName'` "
                    f"and set nodeClasses.{name}.role (or nodeClasses.{name}.instanceProfile to keep the profile)")
    else:
        log.changed(doc, path, "no instanceProfile (the cluster-wide defaultInstanceProfile setting, removed in v1beta1): "
                               "the stack's node role is used")
    if "launchTemplate" in spec:
        log.lost(doc, f"{path}.launchTemplate",
                 f"{spec['launchTemplate']!r} not carried: Karpenter removed unmanaged launch templates in v1beta1 "
                 "(karpenter-convert refuses them: `cannot convert with \"spec.launchTemplate\"`; "
                 "designs/unmanaged-launch-template-removal.md). Copy the template's AMI into "
                 f"nodeClasses.{name}.amiSelectorTerms, its user data into userData, its security groups into "
                 "securityGroupSelectorTerms, its volumes into blockDeviceMappings and its metadata options into "
                 "metadataOptions")
    ami_terms = out.pop("amiSelectorTerms", None)
    if not _ami(out, family, ami_terms, doc, path, log):
        return None
    _imds_default(spec, doc, path, log)
    return out


def from_v1beta1(doc: Document, log: Log) -> dict[str, Any] | None:
    """The v1 EC2NodeClass for a v1beta1 one (ec2nodeclass_conversion.go `ConvertFrom`); fields
    the two versions share are carried as they are, and unknown fields are left for the v1 check."""
    spec = mapping(doc.body.get("spec"), doc, "spec", log)
    if spec is None:
        return None
    out = {k: copy.deepcopy(v) for k, v in spec.items() if k not in ("amiFamily", "amiSelectorTerms")}
    if "role" not in spec and "instanceProfile" not in spec:
        out["role"] = NODE_ROLE_PLACEHOLDER
        log.changed(doc, "spec", "neither role nor instanceProfile (both the v1beta1 and v1 CRDs require one): the "
                                 "stack's node role is used")
    if not _ami(out, spec.get("amiFamily"), copy.deepcopy(spec.get("amiSelectorTerms")) or None, doc, "spec", log):
        return None
    _imds_default(spec, doc, "spec", log)
    return out


def _ami(out: dict[str, Any], family: Any, terms: list | None, doc: Document, path: str, log: Log) -> bool:
    """amiFamily and amiSelectorTerms as v1 wants them (ConvertFrom's switch on the family)."""
    if family in ALIAS_FAMILIES:
        if terms:
            out["amiFamily"], out["amiSelectorTerms"] = family, terms
            return True
        alias = f"{family.lower()}@latest"
        out["amiSelectorTerms"] = [{"alias": alias}]
        log.changed(doc, f"{path}.amiFamily", f"{family} with no AMI selector written as amiSelectorTerms: "
                    f"[{{alias: {alias}}}] (v1 requires amiSelectorTerms; ec2nodeclass_conversion.go ConvertFrom). "
                    f"'@latest' replaces every node when a new AMI is released: pin a version "
                    f"({family.lower()}@vYYYYMMDD) for staging and prod")
        return True
    if family == "Ubuntu":
        if not terms:
            log.error(doc, f"{path}.amiFamily", "Ubuntu: Karpenter v1 has no Ubuntu family and this class selects no AMI "
                      f"({GUIDE}, \"Ubuntu AMIFamily Removed\"): add amiSelectorTerms naming the Ubuntu AMI (id, or "
                      "name and owner) and import again; it then runs as amiFamily AL2 (the same user data format)")
            return False
        out["amiFamily"], out["amiSelectorTerms"] = "AL2", terms
        log.changed(doc, f"{path}.amiFamily", "Ubuntu written as AL2 with your amiSelectorTerms (v1 dropped Ubuntu; "
                    f"AL2's user data format is the same; {GUIDE}, \"Ubuntu AMIFamily Removed\")")
        if "blockDeviceMappings" not in out:
            out["blockDeviceMappings"] = copy.deepcopy(UBUNTU_ROOT)
            log.changed(doc, f"{path}.blockDeviceMappings", "absent: Ubuntu's root volume written out "
                        "(/dev/sda1, 20Gi encrypted gp3), as the conversion webhook does, since AL2's differs")
        return True
    if family == "Custom":
        if not terms:
            log.error(doc, f"{path}.amiSelectorTerms", "amiFamily Custom needs amiSelectorTerms naming the AMI")
            return False
        out["amiFamily"], out["amiSelectorTerms"] = "Custom", terms
        log.changed(doc, f"{path}.userData", "amiFamily Custom: Karpenter v1 expects the node to register with the "
                    "karpenter.sh/unregistered:NoExecute taint; add it to your user data's kubelet registerWithTaints "
                    f"({GUIDE}, \"New Registration Taint\")")
        return True
    if family is None:
        log.error(doc, f"{path}.amiFamily", f"required: one of {', '.join(ALIAS_FAMILIES)}, Ubuntu or Custom")
    else:
        log.error(doc, f"{path}.amiFamily", f"{family!r} is not an AMI family of this API version "
                                           f"({', '.join(ALIAS_FAMILIES)}, Ubuntu or Custom)")
    return False


def _imds_default(spec: dict[str, Any], doc: Document, path: str, log: Log) -> None:
    options = spec.get("metadataOptions")
    if not (isinstance(options, dict) and "httpPutResponseHopLimit" in options):
        log.changed(doc, f"{path}.metadataOptions.httpPutResponseHopLimit", "unset: the default drops from 2 to 1 in v1, "
                    f"so pods without hostNetwork no longer reach the instance metadata service ({GUIDE}, \"New "
                    "MetadataOptions Defaults\"); give such pods IAM through IRSA or Pod Identity")


def nodeclass_object(doc: Document, spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    metadata = object_metadata(doc.body) if name is None else {"name": name}
    return {"apiVersion": NODECLASS_V1, "kind": "EC2NodeClass", "metadata": metadata, "spec": spec}
