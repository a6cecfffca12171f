"""Checks made before anything runs or is stored, so bad input is one line and exit 2, not a failed run.

The parent never imports torch: it asks the chosen interpreter, in one short subprocess, what torch
it has and how many GPUs that torch sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigcheck.engine.hw.gpu_nodes import NO_DRIVER_WORDS
from rigcheck.engine.report.atomic_write import RefusedTarget, existing_target, temp_name
from rigcheck.engine.run.childpath import absolute_program, child_env
from rigcheck.engine.run.given import GivenError, file_path
from rigcheck.engine.run.numbers import parse_count
from rigcheck.engine.run.torch_question import MARK, PROBE_CODE
from rigcheck.engine.store import STORE_ENV, Store, StoreError, default_store_path

PYTHON_TIMEOUT_S = 180
STDOUT = "-"  # as an output file: standard output


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


@dataclass(frozen=True)
class Interpreter:
    """What `python -c 'import torch'` answered: versions, the kind of build, and the GPUs it sees."""

    python: str
    version: str
    torch: str
    build: str
    gpus: int


def _answer(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK) :])
            except ValueError:
                return None
            ok = isinstance(data, dict) and isinstance(data.get("gpus"), int) and isinstance(data.get("torch"), str)
            return data if ok else None
    return None


def inspect_python(python: str, asked: Callable[[], str | None] | None = None) -> Interpreter:
    """Ask `python` about its torch; UsageError("not a Python with torch") when it cannot answer.

    `asked()`: the answer of a warm child already started under `python` (it imports torch once for
    both); where it has none, or a bad one, a fresh interpreter is asked, and its error is the one said."""
    data = _answer(asked() or "") if asked is not None else None
    if data is not None:
        return _interpreter(python, data)
    try:
        with tempfile.TemporaryDirectory(prefix="rigcheck-preflight-") as empty:  # `-c` imports from its folder
            done = subprocess.run(
                [absolute_program(python), "-c", PROBE_CODE],
                capture_output=True,
                text=True,
                timeout=PYTHON_TIMEOUT_S,
                check=False,
                env=child_env(),
                cwd=empty,
            )
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {python}: not a Python with torch (no answer in {PYTHON_TIMEOUT_S} s)") from None
    except OSError as error:
        raise UsageError(f"--python {python}: cannot run it ({error.strerror or error})") from None
    data = _answer(done.stdout)
    if data is None:
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"it exited with code {done.returncode}"])[-1]
        else:
            why = f"it exited with code {done.returncode} without naming a torch version"
        raise UsageError(f"--python {python}: not a Python with torch ({why})")
    return _interpreter(python, data)


def _interpreter(python: str, data: dict[str, Any]) -> Interpreter:
    return Interpreter(
        python, str(data.get("python", "?")), str(data["torch"]), str(data.get("build", "?")), int(data["gpus"])
    )


def run_devices(device: str | None, interpreter: Interpreter) -> tuple[str, tuple[str, ...]]:
    """The run's device and the GPUs it names. No --device, or `all`: every GPU the interpreter's torch
    sees (just `cuda:0` where there is one), else the CPU; a GPU it cannot see is refused."""
    if device == "cpu":
        return "cpu", ()
    if device is None or device == "all":
        gpus = tuple(f"cuda:{i}" for i in range(interpreter.gpus))
        return ("all" if len(gpus) > 1 else gpus[0] if gpus else "cpu"), gpus
    for part in device.split(","):
        check_device(part, interpreter)
    return device, tuple(device.split(","))


def no_gpu_device(device: str | None) -> str:
    """The run's device on a host with no GPU driver at all (hw.gpu_nodes.surely_no_gpu), told without asking
    torch: none or `all` is the CPU; a `cuda:N` is refused, in the words check_device would use."""
    if device is None or device in ("all", "cpu"):
        return "cpu"
    first = next((part for part in device.split(",") if part.startswith("cuda")), device)
    raise UsageError(
        f"--device {first}: this host sees no GPU: {NO_DRIVER_WORDS}; install the GPU's driver, or in a "
        "container pass the GPU through; `--device cpu` measures the CPU"
    )


def check_device(device: str, interpreter: Interpreter) -> None:
    """A `cuda:N` that the interpreter's torch cannot see is refused before the run starts (a list is
    split by run_devices first)."""
    if not device.startswith("cuda"):
        return  # cpu, and all (every GPU there is, else the CPU)
    index = int(device.split(":")[1])
    seen = f"torch {interpreter.torch} ({interpreter.build}) in {interpreter.python}"
    if interpreter.gpus == 0:
        hint = (
            "install a CUDA or ROCm build of torch (see the README)"
            if interpreter.build == "CPU-only"
            else "check the driver and CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES; `rigcheck run probe` says more"
        )
        raise UsageError(f"--device {device}: {seen} sees no GPU; {hint}")
    if index >= interpreter.gpus:
        last = interpreter.gpus - 1
        raise UsageError(
            f"--device {device}: {seen} sees {interpreter.gpus} GPU(s); use cuda:0"
            + (f" to cuda:{last}" if last else "")
            + " or all"
        )


def check_output_file(flag: str, path: str) -> Path | None:
    """Where `flag`'s file will go, tried now, not after an hour-long run: None for `-` (standard output), else a
    path whose folder takes a new file and that holds nothing or a regular file of this user's it may replace
    (a FIFO is refused, never opened: opening one waits for a reader)."""
    if path == STDOUT:
        return None
    try:
        target = file_path(path, flag)
    except GivenError as error:
        raise UsageError(str(error)) from None
    try:
        info = existing_target(target)
        if not os.path.isdir(target.parent):
            raise UsageError(f"{flag} {path}: folder {target.parent} does not exist")
    except RefusedTarget as refused:
        if os.path.isdir(target) and not os.path.islink(target):
            raise UsageError(f"{flag} {path}: is a folder; give a file name") from None
        raise UsageError(f"{flag} {path}: {refused}") from None
    except OSError as error:  # a name too long, a folder that cannot be searched
        raise UsageError(f"{flag} {path}: cannot write there ({error.strerror or error})") from None
    if info is not None and not os.access(target, os.W_OK):
        raise UsageError(f"{flag} {path}: cannot write there (the file is read-only)")
    check_folder_takes_files(flag, path, target)
    return target


def check_folder_takes_files(flag: str, folder: str, target: Path) -> None:
    """`target` can be written the atomic way (a temporary file beside it, renamed into place): its folder is
    a folder that takes new files. Tried now, before any work."""
    where = target.parent
    if not where.exists():
        raise UsageError(f"{flag} {folder}: folder does not exist")
    if not where.is_dir():
        raise UsageError(f"{flag} {folder}: not a folder")
    probe = temp_name(target)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        probe.unlink()
    except OSError as error:
        raise UsageError(f"{flag} {folder}: cannot write there ({error.strerror or error})") from None


def open_store(path: str | None) -> Store:
    """The store named by --store, else $RIGCHECK_STORE, else the default. Only the default's folder is
    made: a store named in a folder that does not exist is a typo far more often than a wish."""
    explicit = path if path is not None else os.environ.get(STORE_ENV)
    source = "--store" if path is not None else STORE_ENV if explicit is not None else "the store"
    if explicit == "-":  # standard output, for an output file; a store is a file that is read back
        raise UsageError(f"{source} -: a store is a file rigcheck reads back; `-` names none: give a file name")
    try:
        target = file_path(explicit, source) if explicit is not None else default_store_path()
    except GivenError as error:
        raise UsageError(str(error)) from None
    try:
        if explicit and not os.path.isdir(target.parent):
            raise UsageError(f"{source} {explicit}: folder {target.parent} does not exist; create it first")
        return Store(target)
    except StoreError as error:
        raise UsageError(str(error)) from None
    except OSError as error:  # a name longer than the file system takes, a folder that cannot be searched
        raise UsageError(f"{source} {explicit or target}: cannot open it ({error.strerror or error})") from None


def resolve_run_id(store: Store, text: str) -> int:
    """A run number (ASCII digits, within SQLite's integers) or 'last', checked to be in the store;
    UsageError otherwise."""
    if text in ("last", "latest"):
        run_id = store.latest_run_id()
        if run_id is None:
            raise UsageError(f"no runs in the store at {store.path}")
        return run_id
    number = parse_count(text)
    if number is None:
        shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
        raise UsageError(f"bad run {shown!r}: give a run number or 'last'")
    if store.run(number) is None:
        raise UsageError(f"no run {number} in the store at {store.path}")
    return number
