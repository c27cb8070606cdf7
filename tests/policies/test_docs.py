"""docs/policies.md is generated from the pack and must be current."""

from policies import docs
from policies.pack import ALL
from tests.harness import PROJECT_DIR


def test_policies_doc_is_current():
    current = (PROJECT_DIR / "docs" / "policies.md").read_text()
    assert current == docs.render(), "run: .venv/bin/python -m policies.docs > docs/policies.md"


def test_policies_doc_lists_every_policy_with_levels():
    text = docs.render()
    for policy in ALL:
        assert f"### `{policy.name}`" in text
        assert f"| [`{policy.name}`](#{policy.name}) |" in text
    assert "| [`nodeclass-ami-pinned`](#nodeclass-ami-pinned) | EC2NodeClass | disabled | mandatory | mandatory | mandatory |" in text
