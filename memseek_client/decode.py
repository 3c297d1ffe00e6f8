"""JSON response bodies → the frozen dataclasses in ``memseek_client.models``.

A model field's JSON member is its name, or ``metadata["json"]`` where the API spells it in
camelCase. Members the model does not declare are ignored, so a newer server that adds a member
does not break an older client; a missing member without a default, or a value of the wrong
JSON type, is ``ResponseShapeError`` naming its dotted location.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from .errors import ResponseShapeError

T = TypeVar("T")
_SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


def json_name(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("json", field.name))


def json_field(name: str, **kwargs: Any) -> Any:
    """A dataclass field whose JSON member is spelled ``name``."""
    return dataclasses.field(metadata={"json": name}, **kwargs)


@functools.cache
def _hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(cls: type[T], value: Any, where: str = "$") -> T:
    """``value`` (parsed JSON) as an instance of ``cls``; raises ``ResponseShapeError``."""
    if not isinstance(value, dict):
        raise _shape(where, "an object", value)
    model: Any = cls  # a dataclass: its fields and hints are read at run time
    hints = _hints(model)
    kwargs = {}
    for field in dataclasses.fields(model):
        name = json_name(field)
        if name in value:
            kwargs[field.name] = _convert(hints[field.name], value[name], f"{where}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ResponseShapeError("response_shape", f"{where}.{name} is missing", f"{where}.{name}")
    return cls(**kwargs)


def _convert(hint: Any, value: Any, where: str) -> Any:
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        if value is None:
            return None
        return _convert(options[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise _shape(where, "an array", value)
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, entry, f"{where}[{index}]") for index, entry in enumerate(value))
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        if not isinstance(value, dict):
            raise _shape(where, "an object", value)
        args = typing.get_args(hint)
        item = args[1] if args else Any
        return MappingProxyType({key: _convert(item, entry, f"{where}.{key}") for key, entry in value.items()})
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode(hint, value, where)
    if hint in _SCALARS:
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if type(value) is not hint:
            raise _shape(where, _SCALARS[hint], value)
        return value
    raise TypeError(f"memseek_client cannot decode {hint!r}")


def _shape(where: str, expected: str, value: Any) -> ResponseShapeError:
    return ResponseShapeError("response_shape", f"{where} must be {expected}, got {type(value).__name__}", where)


def encode(value: Any) -> Any:
    """A request model (or plain JSON) as JSON: ``None`` members of a model are left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {json_name(field): encode(getattr(value, field.name)) for field in dataclasses.fields(value)
                if getattr(value, field.name) is not None}
    if isinstance(value, Mapping):
        return {key: encode(entry) for key, entry in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(entry) for entry in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
