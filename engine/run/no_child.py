"""What the runner can decide about a stage without starting a child for it."""

from __future__ import annotations

import re

from rigcheck.engine.registry import NOTHING_TO_LINK, StageInfo
from rigcheck.engine.run.request import RunRequest

ONE_GPU = re.compile(r"^cuda:\d+$")


def skip_reason(info: StageInfo, request: RunRequest) -> str | None:
    """Why the stage has nothing to do on this request, in the words its child would use; None: run it.

    Only what the request itself settles: a stage that needs two GPUs, asked for one GPU by name. Where
    the answer depends on what torch sees (`all`, a list), the child decides.
    """
    if info.min_gpus >= 2 and ONE_GPU.match(request.device) and len(request.devices) == 1:
        return f"one GPU ({request.device}): {NOTHING_TO_LINK}"
    return None
