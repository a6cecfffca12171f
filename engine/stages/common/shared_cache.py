"""Host work shared by the GPU children of a run, and host work they must take turns at.

CPU work that does not depend on the GPU is done once per run: the first child to need a result
computes it and leaves it in the run's shared folder; the others, running at the same time on other
GPUs, wait for it and read it instead of computing it again."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from rigcheck.engine.stage import SHARED_DIR_ENV
from rigcheck.engine.stages.common.partials import partial_path


def shared_dir() -> Path | None:
    folder = os.environ.get(SHARED_DIR_ENV)
    return Path(folder) if folder else None


@contextlib.contextmanager
def one_at_a_time(name: str) -> Iterator[None]:
    """Hold a run-wide lock while the body runs, so children on other GPUs wait: for work that shares the
    host (PCIe uplinks, host memory) and would slow the others and itself if done by all at once."""
    folder = shared_dir()
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def generator_key(generator: torch.Generator) -> str:
    """The generator's state: two children that draw from equal states draw equal inputs."""
    return hashlib.sha256(generator.get_state().numpy().tobytes()).hexdigest()[:16]


def cached_tensor(key: str, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
    """`compute()`, or the result another child of this run already computed for the same key."""
    folder = shared_dir()
    if folder is None:
        return compute()
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    path = folder / f"{name}.pt"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one child computes; the others wait here, then read
        if path.exists():
            with contextlib.suppress(Exception):
                return torch.load(path, weights_only=True)
        value = compute()
        with contextlib.suppress(OSError, RuntimeError):  # a full disk: the others compute it themselves
            _save(value, path)
        return value


def _save(value: torch.Tensor, path: Path) -> None:
    """Write `value` to a new file beside `path` (O_EXCL), moved into place when whole; removed on every
    failure, so a full disk is never kept full by half a file. A child killed mid-way leaves one that the
    runner removes after the stage (remove_partials)."""
    partial = partial_path(path)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save(value, file)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
