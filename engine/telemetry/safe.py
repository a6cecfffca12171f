"""One wrapper that turns any sensor failure into None: a missing sensor is never an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def safe(read: Callable[..., T], *args: Any, scale: float | None = None) -> T | float | None:
    try:
        value = read(*args)
    except Exception:
        return None
    if value is None:
        return None
    return value * scale if scale is not None else value
