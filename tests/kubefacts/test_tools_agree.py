"""The same value gets the same verdict in the config, the policy pack and the provisioner, because
each judges it with the kernel (kubefacts)."""
import pytest
from pydantic import ValidationError

from components.config.nodepools import NodePool as ConfigNodePool
from kubefacts.labels import restricted_label
from tests.provisioner.prov_builders import nodeclass, nodepool, pod, run
from provisioner.errors import InputError
from tests.harness import MINIMAL_POOL
from tests.policies.analyzer import messages
from tests.policies.builders import nodepool as rendered_nodepool

NITRO = "karpenter.k8s.aws/nitro-sandbox"


def _config_problem(pool: dict) -> str | None:
    try:
        ConfigNodePool.model_validate(pool)
    except ValidationError as err:
        return str(err)
    return None


@pytest.mark.parametrize("value", ["30m1h", "1h30m", "720h", "Never"])
def test_expire_after_the_config_accepts_passes_the_policy(value):
    """karpenter.sh_nodepools.yaml (v1.14.1) expireAfter pattern `(([0-9]+(s|m|h))+|Never)`, then
    time.ParseDuration, which takes units in any order: 30m1h is 90 minutes."""
    assert _config_problem({**MINIMAL_POOL, "expireAfter": value}) is None
    assert messages("nodepool-expire-after-set", [rendered_nodepool(expire_after=value)]) == []


@pytest.mark.parametrize("value", ["1.5h", "30d", "99999999999h"])
def test_expire_after_the_config_refuses_the_policy_flags_in_the_same_words(value):
    config = _config_problem({**MINIMAL_POOL, "expireAfter": value})
    [flagged] = messages("nodepool-expire-after-set", [rendered_nodepool(expire_after=value)])
    reason = flagged.split(": ", 1)[1]
    assert config is not None and reason in config


def test_nitro_sandbox_is_refused_by_config_and_provisioner_alike():
    """aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go does not register
    karpenter.k8s.aws/nitro-sandbox as well-known (it came later), so IsRestrictedLabel refuses it
    in the restricted karpenter.k8s.aws domain, and the NodePool CRD's CEL list lacks it."""
    reason = restricted_label(NITRO, "1.14.1")
    assert reason is not None
    config = _config_problem({**MINIMAL_POOL, "requirements": [{"key": NITRO, "operator": "Exists"}]})
    assert config is not None and reason in config
    with pytest.raises(InputError) as refused:
        run(nodepool(requirements=[(NITRO, "Exists")]), nodeclass(), pod("web", cpu="1"))
    # The provisioner judges through kubefacts.validation: the CRD's CEL rule refuses it first, in
    # the API server's words (tests/kubefacts/test_one_verdict.py holds every tool to them).
    assert ('NodePool "default": spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" '
            "is restricted") == str(refused.value)


def test_nitro_sandbox_is_not_a_label_instance_types_define_for_pods():
    """A pod selecting it needs a NodePool that sets it; v1.14.1 instance types do not carry it."""
    result = run(pod("web", cpu="1", node_selector={NITRO: "true"}))
    assert result.nodeclaims == [] and len(result.unschedulable) == 1
