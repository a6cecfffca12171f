"""The question the preflight asks an interpreter about its torch, kept apart so a warm child can answer it
too: standard library only, as the child is at import time."""

from __future__ import annotations

import contextlib
import io

MARK = "RIGCHECK-PYTHON "
# Runs under the interpreter being checked: standard library and torch only.
PROBE_CODE = f"""
import json, sys
import torch
hip = getattr(torch.version, "hip", None)
build = f"ROCm {{hip}}" if hip else f"CUDA {{torch.version.cuda}}" if torch.version.cuda else "CPU-only"
gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
answer = {{"python": sys.version.split()[0], "torch": torch.__version__, "build": build, "gpus": gpus}}
print({MARK!r} + json.dumps(answer))
"""


def answer_here() -> str:
    """What PROBE_CODE prints when run in this process, or the error that stopped it (no MARK then)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(PROBE_CODE, {})  # the same code the preflight runs in a fresh interpreter
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return out.getvalue()
