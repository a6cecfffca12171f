"""What one stage may leave behind in a warm child, put back before the next: torch's global switches,
thread counts, the environment, sys.path and cached GPU memory.

A warm child runs several stages in one interpreter so torch is imported and the GPU context made once;
this module is what keeps each stage starting as it would in a fresh process. Standard library only at
import time: torch is looked up in sys.modules, never imported here.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Switch = tuple[Callable[[], Any], Callable[[Any], None]]


def _attribute(owner: Any, name: str) -> Switch:
    return (lambda: getattr(owner, name)), (lambda value: setattr(owner, name, value))


def torch_switches(torch: Any) -> dict[str, Switch]:
    """Every process-wide torch setting a stage of ours changes or a figure depends on, as (get, set)."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    switches: dict[str, Switch] = {
        "threads": (torch.get_num_threads, torch.set_num_threads),
        "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
        "deterministic": (
            torch.are_deterministic_algorithms_enabled,
            lambda on: torch.use_deterministic_algorithms(on),
        ),
    }
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(matmul, name):
            switches[f"cuda.matmul.{name}"] = _attribute(matmul, name)
    for name in ("allow_tf32", "benchmark", "deterministic", "enabled"):
        switches[f"cudnn.{name}"] = _attribute(cudnn, name)
    return switches


@dataclass
class FreshState:
    """The child's state as a fresh process has it, taken once; `restore` puts it back after each stage."""

    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    path: list[str] = field(default_factory=lambda: list(sys.path))
    cpus: set[int] = field(
        default_factory=lambda: set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
    )
    torch_values: dict[str, Any] = field(default_factory=dict)

    def take_torch(self) -> None:
        """Read torch's switches, once torch is imported (before any stage has run, or as soon as one did)."""
        torch = sys.modules.get("torch")
        if torch is None or self.torch_values:
            return
        self.torch_values = {name: get() for name, (get, _) in torch_switches(torch).items()}

    def differences(self) -> dict[str, tuple[Any, Any]]:
        """What the last stage changed and left changed: {name: (fresh, now)}."""
        changed: dict[str, tuple[Any, Any]] = {}
        torch = sys.modules.get("torch")
        if torch is not None and self.torch_values:
            for name, (get, _) in torch_switches(torch).items():
                if name in self.torch_values and get() != self.torch_values[name]:
                    changed[name] = (self.torch_values[name], get())
        if dict(os.environ) != self.environ:
            changed["environ"] = (len(self.environ), len(os.environ))
        if sys.path != self.path:
            changed["sys.path"] = (len(self.path), len(sys.path))
        if self.cpus and set(os.sched_getaffinity(0)) != self.cpus:
            changed["cpus"] = (len(self.cpus), len(os.sched_getaffinity(0)))
        return changed

    def restore(self) -> dict[str, tuple[Any, Any]]:
        """Put everything back and free what the stage left cached; returns what had changed."""
        changed = self.differences()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a stage's cancel handler must not outlive it
        torch = sys.modules.get("torch")
        if torch is not None and self.torch_values:
            for name, (_, put) in torch_switches(torch).items():
                if name in changed:
                    put(self.torch_values[name])
        if "environ" in changed:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.path[:] = self.path
        if "cpus" in changed:
            os.sched_setaffinity(0, self.cpus)
        gc.collect()
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        return changed
