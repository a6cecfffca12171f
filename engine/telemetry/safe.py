"""One wrapper that turns any sensor failure into None: a missing sensor is never an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

T = TypeVar("T")


@overload
def safe(read: Callable[..., T], *args: Any) -> T | None: ...
@overload
def safe(read: Callable[..., Any], *args: Any, scale: float) -> float | None: ...
def safe(read: Callable[..., T], *args: Any, scale: float | None = None) -> T | float | None:
    try:
        value = read(*args)
    except Exception:
        return None
    if value is None:
        return None
    return cast(float, value) * scale if scale is not None else value
