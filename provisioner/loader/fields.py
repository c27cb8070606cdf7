"""Typed access to Kubernetes object dicts that reports the key path of anything malformed."""
from __future__ import annotations

from typing import Any, Iterator, overload

from kubefacts import quantity
from kubefacts.quantity import REQUEST_MAX_MILLI
from kubefacts.labels import EFFECTS, POD_OPERATORS, TOLERATION_OPERATORS

from ..errors import InputError
from ..scheduling.requirements import Requirement, Requirements
from ..scheduling.taints import Taint, Toleration


def shown(value) -> str:
    """The value as written, for a message: its type and its text, cut to a readable length."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def mapping_or_empty(value: object) -> dict[Any, Any]:
    """The value when it is a mapping, else an empty one (for lenient reads that never raise)."""
    return value if isinstance(value, dict) else {}


class Ctx:
    """Where an object came from; every accessor takes the key path it is reading."""

    def __init__(self, origin: str | None, kind: str, name: str):
        self.origin = origin
        self.label = f'{kind} "{name}"'

    def error(self, path: str, message: str) -> InputError:
        return InputError(message, origin=self.origin, obj=self.label, path=path)

    def mapping(self, value, path: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(path, f"expected a mapping, got {shown(value)}")
        return value

    def parts(self, obj: dict, *keys: str) -> tuple[dict, ...]:
        """The object's top-level mappings named by `keys` (metadata, spec, status), in order; {}
        for an absent one."""
        return tuple(self.mapping(obj.get(key), key) for key in keys)

    def sequence(self, value, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"expected a list, got {shown(value)}")
        return value

    def string(self, value, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, (str, int, float, bool)):
            raise self.error(path, f"expected a string, got {shown(value)}")
        return str(value)

    @overload
    def integer(self, value: object, path: str, default: int) -> int: ...

    @overload
    def integer(self, value: object, path: str, default: None = None) -> int | None: ...

    def integer(self, value: object, path: str, default: int | None = None) -> int | None:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.error(path, f"expected an integer, got {shown(value)}")
        try:
            return int(value)
        except ValueError:
            raise self.error(path, f"expected an integer, got {shown(value)}") from None

    def quantity(self, value, path: str, ceiling: int = REQUEST_MAX_MILLI) -> int:
        """A non-negative quantity: the API server refuses negative requests, limits and capacities;
        above `ceiling` milli-units the scheduling arithmetic could overflow, so it is refused."""
        try:
            parsed = quantity.milli(value)
        except ValueError as exc:
            raise self.error(path, str(exc)) from None
        if parsed < 0:
            raise self.error(path, f"{value!r} is negative; the API server refuses negative quantities")
        if parsed > ceiling:
            raise self.error(path, f"{value!r} is too large: the simulator takes requests and capacities below 10^15 units")
        return parsed

    def resource_list(self, value, path: str, ceiling: int = REQUEST_MAX_MILLI) -> dict:
        parsed = {self.key(k, path): self.quantity(v, f"{path}.{k}", ceiling)
                  for k, v in self.mapping(value, path).items()}
        for name, milli in parsed.items():
            problem = quantity.whole_units_problem(name, milli)
            if problem:  # ValidateResourceQuantityValue: `nvidia.com/gpu: 0.5` would share one GPU
                raise self.error(f"{path}.{name}", f"{value[name]!r} {problem}")
        return parsed

    def key(self, key, path: str) -> str:
        if not isinstance(key, str):
            raise self.error(path, f"key {key!r} must be a string")
        return key

    def string_map(self, value, path: str) -> dict:
        return {str(k): self.string(v, f"{path}.{k}") for k, v in self.mapping(value, path).items()}

    def requirements(self, value, path: str, operators=POD_OPERATORS, min_values: bool = False) -> Requirements:
        """A list of NodeSelectorRequirements (optionally WithMinValues) as one conjunction."""
        reqs = Requirements()
        for item_path, item in self.items(value, path):
            key = self.string(item.get("key"), f"{item_path}.key")
            if not key:
                raise self.error(f"{item_path}.key", "missing")
            values = [self.string(v, f"{item_path}.values") for v in self.sequence(item.get("values"), f"{item_path}.values")]
            minimum = self.integer(item.get("minValues"), f"{item_path}.minValues") if min_values else None
            try:
                reqs.add(Requirement.of(key, self.string(item.get("operator"), f"{item_path}.operator"),
                                        values, minimum, operators))
            except ValueError as exc:
                sub = "operator" if "operator" in str(exc) and "unknown" in str(exc) else "values"
                raise self.error(f"{item_path}.{sub}", str(exc)) from None
        return reqs

    def items(self, value, path: str) -> Iterator[tuple[str, dict]]:
        """Each entry of a list of mappings, with its key path."""
        for i, item in enumerate(self.sequence(value, path)):
            yield f"{path}[{i}]", self.mapping(item, f"{path}[{i}]")

    def _effect(self, item: dict, at: str, optional: bool = False) -> str:
        effect = self.string(item.get("effect"), f"{at}.effect")
        if (effect or not optional) and effect not in EFFECTS:
            raise self.error(f"{at}.effect", f"unknown taint effect {effect!r}")
        return effect

    def taints(self, value, path: str) -> tuple:
        out = []
        for at, item in self.items(value, path):
            effect = self._effect(item, at)
            out.append(Taint(self.string(item.get("key"), f"{at}.key"), self.string(item.get("value"), f"{at}.value"), effect))
        return tuple(out)

    def tolerations(self, value, path: str) -> tuple:
        out = []
        for at, item in self.items(value, path):
            operator = self.string(item.get("operator"), f"{at}.operator")
            if operator not in TOLERATION_OPERATORS:
                raise self.error(f"{at}.operator", f"unknown toleration operator {operator!r}")
            effect = self._effect(item, at, optional=True)
            out.append(Toleration(self.string(item.get("key"), f"{at}.key"), operator,
                                  self.string(item.get("value"), f"{at}.value"), effect))
        return tuple(out)
