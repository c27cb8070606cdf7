"""How a policy declares its config: one whole-number setting gives the schema, the default in
every environment and the value its check reads."""

from policies import levels
from policies.pack import ALL
from policies.registry import IntegerSetting

ONE_INTEGER = {
    "nodepool-size-capped": ("maxVcpu", 64, "Largest vCPU count a pool may admit without its own instance-cpu requirement."),
    "karpenter-controller-replicas": ("minReplicas", 2, "Fewest controller replicas."),
    "iam-document-size": ("maxCharacters", 6144, "Largest minified document, in characters."),
    "nodepool-has-instance-types": ("minInstanceTypes", 1, "Fewest catalog instance types a pool must admit."),
}


def test_integer_setting_reads_the_configured_value_or_its_default():
    setting = IntegerSetting("maxVcpu", 64, "cap")
    assert setting.read({"maxVcpu": 16}) == 16
    assert setting.read({}) == setting.read({"maxVcpu": None}) == 64


def test_one_integer_policies_declare_an_integer_of_at_least_one_with_one_default():
    specs = {spec.name: spec for spec in ALL}
    for name, (key, default, description) in ONE_INTEGER.items():
        spec = specs[name]
        assert spec.schema == {key: {"type": "integer", "minimum": 1, "description": description}}
        assert [spec.defaults(env) for env in (*levels.ENVIRONMENTS, None)] == [{key: default}] * (len(levels.ENVIRONMENTS) + 1)
