"""The base every config model shares: camelCase keys as in Kubernetes, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Strict config model: YAML keys are camelCase, Python attributes snake_case."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,  # `budget: Infinity` or `1e999` would reach cost.json as a bare Infinity (not JSON)
    )
