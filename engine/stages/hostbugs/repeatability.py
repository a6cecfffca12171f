"""Do the same computations repeat bit for bit? Convolutions on the CPU (oneDNN on and off), whole models, GPUs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

Compute = Callable[[], torch.Tensor]


def differing_fraction(first: torch.Tensor, second: torch.Tensor) -> tuple[float, float]:
    """(fraction of elements that differ, largest absolute difference)."""
    if torch.equal(first, second):
        return 0.0, 0.0
    diff = (first.double() - second.double()).abs()
    return (first != second).double().mean().item(), diff.max().item()


def repeat_twice(compute: Compute) -> tuple[float, float]:
    with torch.no_grad():
        first = compute().detach().clone()
        second = compute().detach().clone()
    return differing_fraction(first, second)


@contextmanager
def onednn(enabled: bool) -> Iterator[None]:
    """Switch CPU convolutions on or off oneDNN (the flags() context would also toggle TF32 and warn)."""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = enabled  # type: ignore[assignment]  # a ContextProp in torch's stubs: it takes a bool
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


@contextmanager
def threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
