"""The one JSON codec for what crosses a process boundary: a front end's RunRequest into the background engine,
and the runner's order to a stage child.

Driven by the dataclasses' own type hints, and checked on the way in: a payload that is not JSON, not ours,
or not the shape its type needs is one CodecError naming what is wrong, never a traceback. Standard library
only: stage children import it under whatever interpreter they run in.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class CodecError(ValueError):
    """A payload that is not JSON, not rigcheck's, or not the shape its type needs; the message says which."""


def encode(obj: Any) -> str:
    """One dataclass as JSON, tagged with its type's name so the reading side can tell a foreign payload."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise CodecError(f"only a dataclass instance can be encoded, not {type(obj).__name__}")
    return json.dumps({"kind": type(obj).__name__, "data": dataclasses.asdict(obj)})


def decode(cls: type[T], text: str | bytes) -> T:
    """The `cls` that `encode` wrote as `text`, or CodecError saying in one sentence why it is not one."""
    try:
        raw = json.loads(text)
    except (ValueError, TypeError) as error:
        raise CodecError(f"a {cls.__name__} payload must be JSON: {error}") from None
    if not isinstance(raw, dict) or set(raw) != {"kind", "data"}:
        raise CodecError(f"not a rigcheck {cls.__name__} payload (want an object with 'kind' and 'data')")
    if raw["kind"] != cls.__name__:
        raise CodecError(f"a {raw['kind']!r} payload where a {cls.__name__} was expected")
    return _build(cls, raw["data"], cls.__name__)


def _build(hint: Any, value: Any, where: str) -> Any:
    """`value` (parsed JSON) as `hint` says it should be; CodecError naming `where` when it is not."""
    if hint is Any or hint is object:
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build_dataclass(hint, value, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _build_union(args, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise CodecError(f"{where}: want a list, got {_kind(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise CodecError(f"{where}: want {len(args)} items, got {len(value)}")
        return tuple(_build(arg, item, f"{where}[{i}]") for i, (arg, item) in enumerate(zip(args, value, strict=True)))
    if origin is list:
        if not isinstance(value, list):
            raise CodecError(f"{where}: want a list, got {_kind(value)}")
        return [_build(args[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise CodecError(f"{where}: want an object, got {_kind(value)}")
        return {key: _build(args[1], item, f"{where}.{key}") for key, item in value.items()}
    return _build_scalar(hint, value, where)


def _build_dataclass(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise CodecError(f"{where}: want an object, got {_kind(value)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise CodecError(f"{where}: unknown field(s) {', '.join(unknown)}")
    missing = [
        name
        for name, f in fields.items()
        if name not in value and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise CodecError(f"{where}: missing field(s) {', '.join(missing)}")
    return cls(**{name: _build(hints[name], item, f"{where}.{name}") for name, item in value.items()})


def _build_union(args: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in args:
        return None
    reasons = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _build(arg, value, where)
        except CodecError as error:
            reasons.append(str(error))
    raise CodecError(reasons[0] if len(reasons) == 1 else f"{where}: {_kind(value)} fits none of its types")


def _build_scalar(hint: Any, value: Any, where: str) -> Any:
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif hint is str:
        ok = isinstance(value, str)
    else:
        raise CodecError(f"{where}: the codec cannot read a {hint!r}")
    if not ok:
        raise CodecError(f"{where}: want {hint.__name__}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
