"""provisioner.lazy: the PEP 562 loader both `provisioner` and `provisioner.api` use."""
from __future__ import annotations

import sys
import types

import pytest

from provisioner import lazy


def _module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__package__ = "provisioner"
    return module


def test_load_imports_the_name_relative_to_the_package_and_keeps_it():
    module = _module("provisioner.example")
    value = lazy.load(vars(module), {"InputError": ".errors"}, "InputError")
    assert value is sys.modules["provisioner.errors"].InputError
    assert vars(module)["InputError"] is value


def test_load_refuses_an_unknown_name_as_python_does():
    module = _module("provisioner.example")
    with pytest.raises(AttributeError, match=r"^module 'provisioner.example' has no attribute 'nope'$"):
        lazy.load(vars(module), {}, "nope")


def test_package_and_api_refuse_unknown_names_with_their_own_module_name():
    import provisioner
    import provisioner.api
    unknown = "nope"
    with pytest.raises(AttributeError, match=r"^module 'provisioner' has no attribute 'nope'$"):
        getattr(provisioner, unknown)
    with pytest.raises(AttributeError, match=r"^module 'provisioner.api' has no attribute 'nope'$"):
        getattr(provisioner.api, unknown)
    assert provisioner.api.DisruptionPass.__module__ == "provisioner.disruption.controller"
