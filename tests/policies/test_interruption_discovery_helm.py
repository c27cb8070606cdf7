"""Interruption, discovery and Helm policies, passing and failing."""

from policies import model as m
from tests.policies.analyzer import UNKNOWN, messages, run, urn_of
from tests.policies.builders import CLUSTER, queue, release, rules_and_targets, tag


def _karpenter(values=None, **props):
    base = {"settings": {"clusterName": CLUSTER, "interruptionQueue": CLUSTER}, "replicas": 2}
    base.update(values or {})
    return release("karpenter", "oci://public.ecr.aws/karpenter/karpenter", "1.14.1", base, skipCrds=True, **props)


def _crds(annotations=None, protect=False):
    return release("karpenter-crd", "oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1",
                   {"additionalAnnotations": {"helm.sh/resource-policy": "keep"} if annotations is None else annotations},
                   protect=protect)


# --- interruption-queue-wired ---

def test_interruption_queue_wired_pass():
    assert run("interruption-queue-wired", [_karpenter(), queue(), *rules_and_targets()]) == []


def test_interruption_queue_missing_fail():
    found = run("interruption-queue-wired", [_karpenter(), *rules_and_targets()])
    assert found == [(urn_of(m.HELM_RELEASE, "karpenter-release"),
                      f"helm release karpenter (karpenter) reads interruption queue '{CLUSTER}', which this stack "
                      "does not declare")]


def test_interruption_rule_missing_fail():
    assert messages("interruption-queue-wired", [_karpenter(), queue(), *rules_and_targets(skip=("rebalance",))]) == [
        f"interruption queue '{CLUSTER}' is not the target of a rule for: EC2 Instance Rebalance Recommendation"]


def test_interruption_rules_target_other_queue_fail():
    resources = [_karpenter(), queue(), *rules_and_targets(arn="arn:aws:sqs:us-east-1:123456789012:other")]
    [message] = messages("interruption-queue-wired", resources)
    assert message.count(";") == 4  # all five event kinds listed


def test_interruption_target_arn_unknown_followed_to_queue_pass():
    q = queue()
    resources = [_karpenter(), q, *rules_and_targets(arn=UNKNOWN)]
    for r in resources:
        if r["type"] == m.EVENT_TARGET:
            r["depends"] = {"arn": [q["urn"]]}
    assert run("interruption-queue-wired", resources) == []


def test_interruption_target_arn_unknown_unresolved_pass():
    assert run("interruption-queue-wired", [_karpenter(), queue(), *rules_and_targets(arn=UNKNOWN)]) == []


def test_interruption_handling_off_pass():
    assert run("interruption-queue-wired", [_karpenter({"settings": {"clusterName": CLUSTER}})]) == []


def test_interruption_queue_declared_but_not_read_fail():
    resources = [_karpenter({"settings": {"clusterName": CLUSTER}}), queue(), *rules_and_targets()]
    assert messages("interruption-queue-wired", resources) == [
        f"helm release karpenter (karpenter) sets no settings.interruptionQueue although the stack sends "
        f"interruption events to queue '{CLUSTER}': Karpenter would never read them"]


# --- discovery-single-security-group ---

def test_one_security_group_tagged_pass():
    assert run("discovery-single-security-group", [tag("subnet-01"), tag("subnet-02"), tag("sg-0abc")]) == []


def test_two_security_groups_tagged_fail():
    found = run("discovery-single-security-group", [tag("subnet-01"), tag("sg-0abc"), tag("sg-0def")])
    assert found == [(urn_of(m.EC2_TAG, "discovery-sg-0def"),
                      "security groups sg-0abc, sg-0def all carry karpenter.sh/discovery; tag exactly one")]


def test_no_security_group_tagged_fail():
    assert messages("discovery-single-security-group", [tag("subnet-01")]) == [
        "the stack tags subnets with karpenter.sh/discovery but no security group; nodes would launch with no "
        "security group Karpenter can find"]


def test_other_tag_keys_ignored_pass():
    assert run("discovery-single-security-group", [tag("sg-0abc"), tag("sg-0def", key="team")]) == []


def test_security_group_id_unknown_pass():
    assert run("discovery-single-security-group", [tag("subnet-01"), tag(UNKNOWN)]) == []


# --- helm-chart-version-pinned ---

def test_chart_versions_pinned_pass():
    assert run("helm-chart-version-pinned", [_karpenter(), _crds(), release("odigos", "odigos", "v1.35.1")]) == []


def test_chart_version_range_fail():
    assert messages("helm-chart-version-pinned", [release("karpenter", "karpenter", "^1.14")]) == [
        "helm release karpenter (karpenter) chart version '^1.14' is not an exact version (e.g. 1.14.1; no ranges, "
        "no 'latest')"]


def test_chart_version_latest_and_empty_fail():
    assert len(run("helm-chart-version-pinned", [release("a", "karpenter", "latest")])) == 1
    assert messages("helm-chart-version-pinned", [release("b", "odigos", None)]) == [
        "helm release b (odigos) sets no chart version: helm installs the newest"]


# --- helm-crds-protected ---

def test_crds_protected_pass():
    assert run("helm-crds-protected", [_karpenter(), _crds(protect=True)]) == []


def test_crds_unprotected_fail():
    assert messages("helm-crds-protected", [_karpenter(), _crds(annotations={})]) == [
        "helm release karpenter-crd (karpenter-crd) does not set additionalAnnotations helm.sh/resource-policy: "
        "keep, so helm uninstall would delete the CRDs"]


def test_crds_also_installed_by_karpenter_release_fail():
    karpenter = _karpenter()
    karpenter["props"]["skipCrds"] = False
    assert messages("helm-crds-protected", [karpenter, _crds(protect=True)]) == [
        "helm release karpenter (karpenter) installs CRDs too (skipCrds is not true) while karpenter-crd owns them; "
        "set skipCrds: true"]


# --- karpenter-controller-replicas ---

def test_controller_replicas_2_pass():
    assert run("karpenter-controller-replicas", [_karpenter()]) == []
    assert run("karpenter-controller-replicas", [_karpenter({"replicas": UNKNOWN})]) == []


def test_controller_single_replica_fail():
    assert messages("karpenter-controller-replicas", [_karpenter({"replicas": 1})]) == [
        "helm release karpenter (karpenter) runs 1.0 controller replica(s); run at least 2"]
