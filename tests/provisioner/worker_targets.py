"""Functions the plan-worker tests run in the worker process (importable by name there)."""
from __future__ import annotations

import time

from provisioner.errors import InputError


def echo(value, *, catalog=None):
    return {"value": value, "catalog": catalog}


def forever(*_args, catalog=None):
    while True:  # a plan that never ends (a budget schedule walked minute by minute, and worse)
        time.sleep(0.05)


def refuse(*_args, catalog=None):
    raise InputError("bad pod", obj='Pod "default/x"', path="spec")


def crash(*_args, catalog=None):
    raise ZeroDivisionError("division by zero")
