"""The pack as a whole: policy list, levels per environment, config, and the real CrossGuard
entry point (`policies/__main__.py` started the way the CLI starts it, then asked over gRPC)."""

import json
import os
import subprocess
import sys
import time

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel

from policies import levels
from policies.pack import ALL, BY_NAME
from policies.crossguard import build_policies, environment_from_env
from policies.engine import resolve, validate_config
from tests.harness import PROJECT_DIR
from tests.policies.analyzer import urn_of
from tests.policies.builders import GENERAL_REQUIREMENTS, nodepool


def test_pack_has_at_least_15_policies_each_with_level_row_and_rationale():
    assert len(ALL) >= 15
    assert [p.name for p in ALL] == list(levels.LEVELS)
    for policy in ALL:
        assert len(policy.description) > 80, policy.name
        assert " " not in policy.name and policy.name == policy.name.lower()


# Advice, not a rule, in every environment: a pool may be uncapped on purpose (docs/cost.md).
ADVISORY_EVERYWHERE = {"nodepool-size-capped"}


def test_levels_prod_is_all_mandatory_and_dev_has_advisories():
    prod = {p.name: resolve(p, "prod").level for p in ALL}
    dev = {p.name: resolve(p, "dev").level for p in ALL}
    assert {name for name, level in prod.items() if level != "mandatory"} == ADVISORY_EVERYWHERE
    assert {resolve(BY_NAME[name], env).level for name in ADVISORY_EVERYWHERE
            for env in ("dev", "staging", "prod", "qa")} == {"advisory"}
    assert dev["nodeclass-ami-pinned"] == "disabled"
    assert dev["karpenter-controller-replicas"] == "advisory"
    assert dev["iam-no-wildcard-action"] == "mandatory"


def test_unknown_environment_gets_prod_levels_and_dev_ceilings():
    assert {resolve(p, "qa").level for p in ALL if p.name not in ADVISORY_EVERYWHERE} == {"mandatory"}
    assert resolve(BY_NAME["nodepool-limits-within-ceiling"], "qa").properties["ceilings"]["cpu"] == "128"


def test_config_all_then_policy_entry_override_levels():
    config = {"all": "advisory", "iam-document-size": {"enforcementLevel": "mandatory", "maxCharacters": 100}}
    assert resolve(BY_NAME["iam-no-wildcard-action"], "prod", config).level == "advisory"
    resolved = resolve(BY_NAME["iam-document-size"], "prod", config)
    assert (resolved.level, resolved.properties["maxCharacters"]) == ("mandatory", 100)


def test_validate_config_rejects_bad_level_and_off_schema_property():
    problems = validate_config({"iam-document-size": {"enforcementLevel": "strict", "maxCharacters": "big"},
                                "nodepool-gpu-tainted": {"colour": "red"}})
    assert "iam-document-size: enforcementLevel 'strict' is not one of advisory, mandatory, remediate, disabled" in problems
    assert "iam-document-size.maxCharacters: 'big' is not of type 'integer'" in problems
    assert any(p.startswith("nodepool-gpu-tainted: Additional properties are not allowed") for p in problems)


def test_environment_from_env_prefers_stack_config_then_stack_name():
    config = json.dumps({"karpenter-platform:environment": "prod", "aws:region": "us-east-1"})
    assert environment_from_env({"PULUMI_CONFIG": config, "PULUMI_STACK": "prod-eu"}) == "prod"
    assert environment_from_env({"PULUMI_STACK": "staging"}) == "staging"
    assert environment_from_env({"PULUMI_STACK": "acme/karpenter-platform/dev"}) == "dev"
    assert environment_from_env({}) is None


def test_crossguard_policies_carry_schema_and_environment_levels():
    policies = {p.name: p for p in build_policies("dev")}
    assert policies["nodepool-limits-within-ceiling"].config_schema.properties["ceilings"]["type"] == "object"
    assert policies["karpenter-controller-replicas"].enforcement_level == EnforcementLevel.ADVISORY
    assert {p.enforcement_level for p in build_policies("prod") if p.name not in ADVISORY_EVERYWHERE} == {
        EnforcementLevel.MANDATORY}


# --- the real entry point ------------------------------------------------------------------------

@pytest.fixture
def analyzer():
    """`python -u -m pulumi.policy <engine> .` in policies/, as pulumi-analyzer-policy-python runs it."""
    env = {**os.environ, "PULUMI_PROJECT": "karpenter-platform", "PULUMI_STACK": "dev", "PULUMI_DRY_RUN": "true",
           "PULUMI_CONFIG": json.dumps({"karpenter-platform:environment": "dev"})}
    process = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", "."],
                               cwd=PROJECT_DIR / "policies", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + 60
        line = process.stdout.readline()
        if not line.strip().isdigit():
            process.kill()
            pytest.fail(f"pack did not print a port: {line!r} {process.stderr.read()}")
        channel = grpc.insecure_channel(f"127.0.0.1:{line.strip()}")
        grpc.channel_ready_future(channel).result(timeout=max(1, deadline - time.monotonic()))
        yield proto.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.slow
def test_main_serves_policy_list_with_dev_levels(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "karpenter-platform"
    by_name = {p.name: p for p in info.policies}
    assert list(by_name) == list(levels.LEVELS)
    assert by_name["nodeclass-ami-pinned"].enforcementLevel == proto.DISABLED
    assert by_name["nodepool-disruption-budgets"].enforcementLevel == proto.ADVISORY
    assert by_name["iam-no-wildcard-action"].enforcementLevel == proto.MANDATORY
    schema = json_format.MessageToDict(by_name["nodepool-limits-within-ceiling"].configSchema.properties)
    assert schema["ceilings"]["type"] == "object"


@pytest.mark.slow
def test_main_analyze_stack_reports_violation_with_urn_and_level(analyzer):
    pool = nodepool(limits={"cpu": "500", "memory": "400Gi"}, requirements=GENERAL_REQUIREMENTS + [
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["33"]}])
    properties = struct_pb2.Struct()
    properties.update(pool["props"])
    resource = proto.AnalyzerResource(type=pool["type"], properties=properties, urn=pool["urn"], name=pool["name"],
                                      options=proto.AnalyzerResourceOptions())
    response = analyzer.AnalyzeStack(proto.AnalyzeStackRequest(resources=[resource]))
    found = [(d.policyName, d.urn, d.enforcementLevel) for d in response.diagnostics]
    assert found == [("nodepool-limits-within-ceiling", urn_of("kubernetes:karpenter.sh/v1:NodePool", "nodepool-web-api"),
                      proto.MANDATORY)]
    assert response.diagnostics[0].message.endswith("NodePool web-api limit cpu=500 is above the dev ceiling of 128")
