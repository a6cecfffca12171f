"""One run per GPU per machine, whatever store each run writes to: an flock per GPU in the user's lock folder.

The store already refuses a second run on a device among its own runs; these locks catch a run from
another store. A lock is held by the engine's open file, so it goes with the engine however the
engine ends (`kill -9` included). The folder is per user (engine/run/runtime.py: `$TMPDIR/rigcheck-UID`,
ours and mode 0700), so runs of other users are not seen here: a folder all users could write
would let any of them hold every GPU's lock. When no lock can be taken (another user took that folder's
name and no fallback is free), the run is refused, since a neighbour could otherwise switch the lock off
and let a second run share the GPU; `--force` goes on, and every figure says the GPU may be shared.
Another user's work on the GPU shows up in the contention check instead. The CPU is not locked: many runs
may share it, each marked by the contention check.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re

from rigcheck.engine.run.runtime import FolderRefused, lock_dir


class DeviceLocked(Exception):
    """A GPU is held by a run of another store; the message names that run and its store."""


def physical_name(device: str) -> str:
    """The GPU that `cuda:N` names for this process: CUDA_VISIBLE_DEVICES (or HIP_VISIBLE_DEVICES) maps
    the index to the machine's own index or UUID, so two shells with different masks agree."""
    index = int(device.split(":")[1]) if ":" in device else 0
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        mask = [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]
        if mask and index < len(mask):
            return f"gpu-{mask[index]}"
    return f"gpu-{index}"


def _file_name(device: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", physical_name(device)) + ".lock"


class DeviceLocks:
    """The locks of the GPUs one run holds, taken at once or not at all; `release` lets them go."""

    def __init__(self) -> None:
        self._files: list[int] = []
        self._who: dict[str, object] = {}
        self.note: str | None = None  # why no lock could be taken at all (the run goes on without)

    def take(self, devices: tuple[str, ...], store: str, force: bool = False) -> DeviceLocks:
        """Lock every GPU in `devices` for a run of `store`; DeviceLocked when one is held elsewhere (with
        `force`, the run goes on and shares it)."""
        gpus = sorted({_file_name(d) for d in devices if d.startswith("cuda")})
        if not gpus:
            return self
        try:
            folder = lock_dir()
        except FolderRefused as refused:
            return self._unlocked(f"no machine-wide device lock: {refused}", force)
        self._who = {"store": store, "pid": os.getpid()}
        for name in gpus:
            try:
                fd = os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError as error:
                self._unlocked(f"no machine-wide lock for {name}: {error.strerror or error}", force)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                if force:
                    continue
                self.release()
                raise DeviceLocked(_busy(name, holder)) from None
            self._files.append(fd)
            _write(fd, self._who)
        return self

    def _unlocked(self, why: str, force: bool) -> DeviceLocks:
        """No lock could be taken: with --force a note (the run is marked as sharing anyway), else refused."""
        if not force:
            self.release()
            raise DeviceLocked(
                f"{why}; another user may have taken that name so that a second run shares the GPU: remove it, "
                "or set XDG_RUNTIME_DIR to a private folder of yours, or add --force "
                "(every figure will say the GPU may be shared)"
            )
        self.note = why
        return self

    def name_run(self, run_id: int) -> None:
        """Once the run has its number, each lock says so (for the message another run gets)."""
        for fd in self._files:
            _write(fd, {**self._who, "run": run_id})

    def release(self) -> None:
        for fd in self._files:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._files = []


def _write(fd: int, who: dict[str, object]) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(who).encode(), 0)


def _holder(fd: int) -> dict[str, object]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(os.pread(fd, 65536, 0) or b"{}")
        if isinstance(data, dict):
            return data
    return {}


def _busy(name: str, holder: dict[str, object]) -> str:
    gpu = name.removesuffix(".lock")
    run, store, pid = holder.get("run"), holder.get("store"), holder.get("pid")
    if run is None:
        return (
            f"{gpu} is in use by another rigcheck run on this machine (pid {pid}, store {store}); wait, or add --force"
        )
    return (
        f"{gpu} is in use by run {run} of store {store} (pid {pid}): follow it with "
        f"`rigcheck follow {run} --store {store}`, or add --force (every figure will say the GPU was shared)"
    )
