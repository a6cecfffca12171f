"""A PYTHONPATH entry that lets any interpreter import rigcheck.engine without rigcheck installed there."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

import psutil

_ENGINE_DIR = Path(__file__).resolve().parent.parent
PREFIX = "rigcheck-child-"
EARLY_PREFIX = "rigcheck-early-"  # warm_pool's folder for the child parked beside the preflight
_OWNED = re.compile(rf"^(?:{PREFIX}|{EARLY_PREFIX})(\d+)-")
_shim: Path | None = None


def _owner_gone(pid: int, folder: Path) -> bool:
    """The pid is not running, or is a newer process than the folder (the pid was reused)."""
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False  # another user's process: not ours to judge
    try:
        return started > folder.lstat().st_mtime + 1.0
    except OSError:
        return False


def sweep_stale(folder: Path | None = None) -> list[Path]:
    """Remove shim and early-child folders left by processes that died without running atexit (SIGKILL, a
    crash): each carries its owner's pid in its name."""
    removed = []
    base = Path(folder or tempfile.gettempdir())
    for path in [*base.glob(f"{PREFIX}*"), *base.glob(f"{EARLY_PREFIX}*")]:
        match = _OWNED.match(path.name)
        if match and int(match.group(1)) != os.getpid() and _owner_gone(int(match.group(1)), path):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(path)
    return removed


def absolute_pythonpath(value: str | None) -> list[str]:
    """A PYTHONPATH's entries made absolute against the current folder, empty ones dropped.

    Children start in a folder of our choosing, never the caller's: an entry the user named keeps the
    meaning it had where they named it, and an empty one (`PYTHONPATH=:x` means "the current folder",
    usually by accident) is dropped rather than let the caller's folder back in.
    """
    return [os.path.abspath(entry) for entry in (value or "").split(os.pathsep) if entry]


def child_env(*first: str) -> dict[str, str]:
    """This process's environment for a child, with `first` ahead of an absolute PYTHONPATH (none if empty)."""
    env = dict(os.environ)
    paths = [*first, *absolute_pythonpath(env.pop("PYTHONPATH", None))]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def absolute_program(program: str) -> str:
    """A program named by a path made absolute, so it runs the same from another folder; a bare name
    is still looked up on PATH."""
    return os.path.abspath(program) if os.sep in program else program


def shim_dir() -> Path:
    """A private folder holding `rigcheck/engine` as a link to this engine, made once per process.

    Putting site-packages itself on another interpreter's path would drag this interpreter's
    compiled packages (numpy, torch) into it; a link to the engine alone brings only our code.
    The owner's pid is in the folder's name, so a later process can remove it if the owner was killed.
    """
    global _shim
    if _shim is None or not _shim.exists():
        sweep_stale()
        root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        (root / "rigcheck").mkdir()
        (root / "rigcheck" / "engine").symlink_to(_ENGINE_DIR, target_is_directory=True)
        atexit.register(shutil.rmtree, root, True)
        _shim = root
    return _shim
