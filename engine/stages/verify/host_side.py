"""Verify's CPU-only work (float64 references, the CPU arm, the float64 model) in one thread beside the GPU's
checks, and torch.optim's 3-5 s import started at once: on a slow host neither waits for the other.

Verify measures no throughput, so nothing it times is disturbed. Both are done, or waited for, before the
stage ends (`close`): no work of verify's is left running beside the next stage's figures.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
OPTIM_IMPORT = "torch._dynamo"  # torch.optim's first optimizer imports it (its __init__ is wrapped by dynamo)


class HostSide:
    """CPU work handed off as futures: run in one thread beside the caller (`beside`), or at once, in line
    (on a CPU device the checks themselves use the same cores, so nothing would overlap)."""

    def __init__(self, beside: bool) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="verify-host") if beside else None
        self._imports: list[threading.Thread] = []

    @property
    def beside(self) -> bool:
        return self._pool is not None

    def submit(self, work: Callable[..., T], *args: object) -> Future[T]:
        if self._pool is not None:
            return self._pool.submit(work, *args)
        done: Future[T] = Future()
        try:
            done.set_result(work(*args))
        except Exception as error:  # raised where the result is read, as from the thread
            done.set_exception(error)
        return done

    def start_import(self, name: str = OPTIM_IMPORT) -> None:
        """Import `name` in a thread of its own, unless it is there already; a failure is left to the stage,
        which imports it itself (and says so) when it needs it."""
        if name in sys.modules:
            return
        thread = threading.Thread(target=_import_quietly, args=(name,), name=f"verify-import-{name}", daemon=True)
        thread.start()
        self._imports.append(thread)

    def wait_imports(self) -> None:
        """Before the import is needed: the stage's own thread then never imports beside it."""
        for thread in self._imports:
            thread.join()

    def close(self) -> None:
        """Wait for what runs (a float64 matmul cannot be stopped half-way), drop what has not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self.wait_imports()


def _import_quietly(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:  # an older or partial torch: the stage's own import says what is wrong, in line
        return
