"""Run a Pulumi program (or one component) in-process under the SDK's mock monitor and capture
every resource it declares: type, name, parent, options and inputs as the provider receives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pulumi
from pulumi.runtime import mocks as sdk_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime import settings as sdk_settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

SECRET = "[secret]"
# What a value the engine does not know yet (in a preview) is written as in resources.json.
UNKNOWN = "[unknown]"


def plain(value: Any) -> Any:
    """A JSON-ready copy of deserialized inputs: secrets masked, unknowns (preview) as
    "[unknown]", resources as their URN."""
    if isinstance(value, pulumi.output.Unknown) or value == rpc.UNKNOWN:
        return UNKNOWN
    if rpc.is_rpc_secret(value):
        return SECRET
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return f"<resource {type(value).__name__}>"
    if isinstance(value, (pulumi.Asset, pulumi.Archive)):
        return {"asset": getattr(value, "path", None) or getattr(value, "text", None) or repr(value)}
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf numbers are doubles; `replicas: 2` should stay 2
    return value


def _copy_struct(value: Any) -> Any:
    copied = type(value)()
    copied.CopyFrom(value)
    return copied


def _mask_leaf_secrets(value: Any) -> Any:
    """Replace each secret in a protobuf value by "[secret]" where it sits. The SDK's deserializer
    would mark the whole enclosing map secret, hiding e.g. every helm value next to one token."""
    from google.protobuf import struct_pb2

    if isinstance(value, struct_pb2.Struct):
        sig = value.fields.get(rpc._special_sig_key)
        if sig is not None and (sig.string_value == rpc._special_secret_sig or (
                sig.string_value == rpc._special_output_value_sig and value.fields.get("secret", struct_pb2.Value()).bool_value)):
            return None
        for item in value.fields.values():
            if item.HasField("struct_value") and _mask_leaf_secrets(item.struct_value) is None:
                item.string_value = SECRET
            elif item.HasField("list_value"):
                _mask_leaf_secrets(item.list_value)
    elif isinstance(value, struct_pb2.ListValue):
        for item in value.values:
            if item.HasField("struct_value") and _mask_leaf_secrets(item.struct_value) is None:
                item.string_value = SECRET
            elif item.HasField("list_value"):
                _mask_leaf_secrets(item.list_value)
    return value


@dataclass
class Declared:
    """One resource as the engine received it."""

    type: str
    name: str
    urn: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    options: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs,
                "urn": self.urn, "custom": self.custom, "options": self.options}


@dataclass
class Capture:
    resources: list[Declared] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_token: str) -> list[Declared]:
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str, type_token: str | None = None) -> Declared:
        found = [r for r in self.resources if r.name == name and (type_token is None or r.type == type_token)]
        if len(found) != 1:
            raise KeyError(f"expected one resource named {name!r}, found {len(found)}")
        return found[0]

    def by_urn(self) -> dict[str, Declared]:
        return {r.urn: r for r in self.resources}


class CapturingMonitor(sdk_mocks.MockMonitor):
    """The SDK's mock monitor, also recording what a real engine would be told."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.declared: list[Declared] = []
        self.stack_urn: str | None = None

    def RegisterResource(  # noqa: N802 - gRPC method name
            self, request: resource_pb2.RegisterResourceRequest) -> resource_pb2.RegisterResourceResponse:
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = response.urn
            return response
        inputs = rpc.deserialize_properties(_mask_leaf_secrets(_copy_struct(request.object)))
        options = {
            "protect": bool(request.protect) if request.HasField("protect") else False,
            "retainOnDelete": bool(request.retainOnDelete) if request.HasField("retainOnDelete") else False,
            "dependsOn": sorted(request.dependencies),
            "deleteBeforeReplace": bool(request.deleteBeforeReplace),
            "ignoreChanges": list(request.ignoreChanges),
            "provider": request.provider or None,
            "deletedWith": request.deletedWith or None,
            "customTimeouts": {k: getattr(request.customTimeouts, k) for k in ("create", "update", "delete")
                               if getattr(request.customTimeouts, k)},
        }
        parent = request.parent or None
        self.declared.append(Declared(
            type=request.type, name=request.name, urn=response.urn,
            parent=None if parent == self.stack_urn else parent,
            custom=bool(request.custom), inputs=plain(inputs), options=options,
        ))
        return response

    def ReadResource(  # noqa: N802 - gRPC method name
            self, request: resource_pb2.ReadResourceRequest) -> resource_pb2.ReadResourceResponse:
        response = super().ReadResource(request)
        # The engine answers a read with the resource's id (the SDK's mock leaves it empty,
        # which a preview would take for "unknown"): a StackReference's id is its stack name.
        if not response.id:
            response.id = request.id
        parent = request.parent or None
        self.declared.append(Declared(
            type=request.type, name=request.name, urn=response.urn,
            parent=None if parent == self.stack_urn else parent, custom=True,
            inputs=plain(rpc.deserialize_properties(request.properties)),
            options={"read": True, "id": request.id},
        ))
        return response


def run(
    program: Callable[[], Any],
    mocks: pulumi.runtime.Mocks,
    *,
    project: str = "karpenter-platform",
    stack: str = "test",
    config: dict[str, str] | None = None,
    secret_keys: list[str] | None = None,
    preview: bool = False,
) -> Capture:
    """Run `program` (a whole program or a function declaring one component) and return what it
    declared and exported. By default with applies on (as `pulumi up` runs it); `preview=True`
    runs it as `pulumi preview` does: a value computed from an attribute the provider only
    knows after creating a resource stays unknown, its applies do not run, and it is captured
    as "[unknown]" (the mocks must then answer only known values, see PlaceholderMocks)."""
    # a fresh stack per run, even within one process (set_root_resource's body: its signature refuses None)
    sdk_settings.ROOT.set(None)
    monitor = CapturingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config or {}), list(secret_keys or []))
    settings = sdk_settings.SETTINGS
    settings.rpc_manager.clear()
    settings.outputs.clear()
    captured: dict[str, Any] = {}

    async def body() -> None:
        program()
        root = sdk_settings.get_root_resource()
        for key, value in dict(getattr(root, "outputs", {}) or {}).items():
            output = pulumi.Output.from_input(value)
            resolved = await output.future()
            if await output.is_secret():
                captured[key] = SECRET
            elif not await output.is_known():
                captured[key] = UNKNOWN
            else:
                captured[key] = plain(resolved)

    try:
        _sync_await(run_pulumi_func(body))
    except BaseException as err:
        _forget_unretrieved(_ensure_event_loop(), err)
        raise
    return Capture(resources=monitor.declared, outputs=captured)


def _forget_unretrieved(loop: Any, raised: BaseException) -> None:
    """When the program fails, the SDK has also set that error on the futures of the outputs and
    resources it declared, and nobody awaits them: each would be logged as "Future exception was
    never retrieved" when collected (dozens after a test run). The error reaches the caller here,
    so those duplicates of it (and only those) are dropped; anything else still reaches the loop's
    handler."""
    previous = loop.get_exception_handler()

    def handler(loop: Any, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if context.get("message") == "Future exception was never retrieved" and error is not None and (
                error is raised or (type(error) is type(raised) and str(error) == str(raised))):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
