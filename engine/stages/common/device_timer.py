"""Times work on the device it runs on: its own stream and events there, or the wall clock on the CPU.

Events recorded on the *current* device's stream time nothing when the work runs on another GPU
(cuda:1 once read 6,554 TFLOP/s fp32 that way), so every mark here names the measured device's stream.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch


class DeviceTimer:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device=device) if self.cuda else None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make the device and its stream current in this thread, so the work inside lands on them."""
        if not self.cuda:
            yield
            return
        with torch.cuda.device(self.device), torch.cuda.stream(self.stream):
            yield

    def mark(self) -> Any:
        """A point in the device's work: an event on its stream, or the wall clock on the CPU."""
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record(self.stream)
        return event

    def wait(self, mark: Any) -> None:
        """Block until the device has done everything before `mark`."""
        if self.cuda:
            mark.synchronize()

    def seconds(self, start: Any, end: Any) -> float:
        """Seconds between two marks; `end` must have been waited for."""
        if not self.cuda:
            return float(end - start)
        return start.elapsed_time(end) / 1000.0
