"""The stage child's events on their way up the pipe: made plain in the child, and read back under an allow-list.

An event is pickled. A value of torch's or numpy's own type inside one (torch.__version__ is a TorchVersion, a
str subclass) made the parent import torch to unpickle it: 3.6 s on the first stage of every run, and torch in
the app process, which must never import it. So the child turns every value into plain Python before it sends,
and the parent refuses any class outside the events module and the builtins, rather than import its module.
Standard library only: stage children import it under whatever interpreter they run in.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle
from multiprocessing.connection import Connection
from typing import Any

from rigcheck.engine import events

_BUILTINS = {"set", "frozenset", "complex", "slice", "range", "bytearray"}
_PICKLE_HELPERS = {("copyreg", "_reconstructor"), ("builtins", "object")}


class ForeignEvent(pickle.UnpicklingError):
    """What came up the pipe holds a class the parent will not import."""


def plain(value: Any) -> Any:
    """`value` with every part a plain builtin: a str, int or float subclass (numpy's, torch's) becomes its
    base type, a mapping a dict, a sequence a list or tuple; anything else its str()."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, enum.Enum):
        return value if type(value).__module__ == events.__name__ else plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value).__module__ == events.__name__:
            made = {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return dataclasses.replace(value, **made)
        return plain(dataclasses.asdict(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, list | set | frozenset):
        return [plain(v) for v in value]
    item = getattr(value, "item", None)  # a numpy or torch scalar
    if callable(item):
        try:
            got = item()
        except (TypeError, ValueError, RuntimeError):
            return str(value)
        if isinstance(got, bool | int | float):
            return plain(got)
    return str(value)


class _EventUnpickler(pickle.Unpickler):
    """Builds only the events module's classes and plain builtins; anything else is a ForeignEvent."""

    def find_class(self, module: str, name: str) -> Any:
        if module == events.__name__ and hasattr(events, name):
            return getattr(events, name)
        if (module == "builtins" and name in _BUILTINS) or (module, name) in _PICKLE_HELPERS:
            return super().find_class(module, name)
        raise ForeignEvent(f"{module}.{name}")


def send_event(conn: Connection, event: Any) -> None:
    """Send one event up the pipe, made plain first."""
    conn.send(plain(event))


def receive_event(conn: Connection) -> Any:
    """The next event on the pipe; ForeignEvent where it holds a class from outside (nothing is imported)."""
    return _EventUnpickler(io.BytesIO(conn.recv_bytes())).load()
