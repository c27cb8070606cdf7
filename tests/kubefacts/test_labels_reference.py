"""The kernel's well-known and restricted labels per release against the per-release reference
data: the NodePool CRD's CEL allow-lists (karpenter.sh_nodepools.yaml of each release, as carried in
components/reference/data/<release>.json and, when present, ../shared/reference) must name exactly
the restricted-domain keys the kernel lets a NodePool use, plus `karpenter.k8s.aws/ec2nodeclass`,
which the CRD lists but the provider never registers as well-known (aws/karpenter-provider-aws
pkg/apis/v1/labels.go), so Karpenter's runtime IsRestrictedLabel still refuses it."""
import json
import re
from pathlib import Path

import pytest

from kubefacts import labels
from tests.harness import PROJECT_DIR

# The served CRD schemas per release (make reference writes them beside the validator).
DATA = PROJECT_DIR / "kubefacts" / "validation" / "crds"
SHARED = [PROJECT_DIR.parent / "shared" / "reference" / "karpenter-versions",
          Path("/work/shared/reference/karpenter-versions")]
_ALLOW_LIST = re.compile(r'in \[([^\]]*)\] \|\| !\w+\.find\(\\?"\^\(\[\^/\]\+\)\\?"\)\.endsWith\(\\?"([a-z0-9.]+)\\?"\)')


def crd_allow_lists(text: str) -> dict[str, set[str]]:
    """domain -> keys a NodePool's requirement or label keys may use in it (every CEL list agrees)."""
    found: dict[str, set[str]] = {}
    for names, domain in _ALLOW_LIST.findall(text):
        keys = set(re.findall(r'[a-z0-9./-]+/[a-z0-9.-]+', names.replace('\\"', '"')))
        assert found.setdefault(domain, keys) == keys, f"{domain}: the CRD's lists disagree"
    return found


def kernel_allows(release: str, domain: str) -> set[str]:
    candidates = labels.well_known(release) | {labels.NODECLASS, labels.NODEPOOL}
    return {k for k in candidates if k.split("/", 1)[0] == domain}


def _sources():
    for release in labels.SUPPORTED_RELEASES:
        data = json.loads((DATA / f"{release}.json").read_text())
        yield pytest.param(release, json.dumps(data["karpenter.sh_nodepools"]), id=f"{release}-data")
        for root in SHARED:
            crd = root / release / "crds" / "karpenter.sh_nodepools.yaml"
            if crd.is_file():
                yield pytest.param(release, crd.read_text(), id=f"{release}-shared")
                break


@pytest.mark.parametrize("release, crd_text", list(_sources()))
def test_kernel_well_known_labels_match_the_crd_of_each_release(release, crd_text):
    allow = crd_allow_lists(crd_text)
    assert set(allow) == {"karpenter.sh", "karpenter.k8s.aws"}
    for domain, keys in allow.items():
        assert kernel_allows(release, domain) == keys, domain


@pytest.mark.parametrize("release", labels.SUPPORTED_RELEASES)
def test_restricted_label_follows_the_release(release):
    for key in labels.well_known(release):
        if key != labels.NODEPOOL:
            assert labels.restricted_label(key, release) is None, key
    for key in (labels.NODEPOOL, labels.NODECLASS, labels.HOSTNAME, "karpenter.k8s.aws/nitro-sandbox", "karpenter.sh/x"):
        assert labels.restricted_label(key, release) is not None, key
    placement = labels.restricted_label(labels.PLACEMENT_GROUP_ID, release)
    assert (placement is None) is (release != "1.10.2")  # provider v1.11 registered it
