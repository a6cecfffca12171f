"""The GPUs a run would use, asked of the stage interpreter's torch on a thread, so that the app draws at once.

Asking means starting that Python and importing torch: 3-6 s on a 2-core host, which the app's first draw
used to wait for. Now the app opens on the GPUs its telemetry sees and takes torch's answer when it comes
(torch may see fewer: CUDA_VISIBLE_DEVICES, a CPU-only build). A run asked for meanwhile starts then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rigcheck.engine.run.preflight import UsageError, inspect_python, run_devices
from textual.message import Message


@dataclass
class GpusAnswered(Message):
    """Torch's answer: the default device and every GPU it sees; `error` where it could not answer."""

    device: str = "cpu"
    gpus: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None


def ask(python: str) -> GpusAnswered:
    try:
        device, gpus = run_devices(None, inspect_python(python))
    except UsageError as error:
        return GpusAnswered(error=str(error))
    return GpusAnswered(device, gpus)


def ask_in_background(python: str, post: Callable[[Message], object]) -> threading.Thread:
    thread = threading.Thread(target=lambda: post(ask(python)), name="rigcheck-ask-gpus", daemon=True)
    thread.start()
    return thread
