"""A PYTHONPATH entry that lets any interpreter import rigcheck.engine without rigcheck installed there."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_ENGINE_DIR = Path(__file__).resolve().parent
_shim: Path | None = None


def shim_dir() -> Path:
    """A private folder holding `rigcheck/engine` as a link to this engine, made once per process.

    Putting site-packages itself on another interpreter's path would drag this interpreter's
    compiled packages (numpy, torch) into it; a link to the engine alone brings only our code.
    """
    global _shim
    if _shim is None or not _shim.exists():
        root = Path(tempfile.mkdtemp(prefix="rigcheck-child-"))
        (root / "rigcheck").mkdir()
        (root / "rigcheck" / "engine").symlink_to(_ENGINE_DIR, target_is_directory=True)
        atexit.register(shutil.rmtree, root, True)
        _shim = root
    return _shim
