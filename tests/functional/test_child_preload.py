"""The first stage child imports torch._dynamo (torch.optim's 3-5 s import) in a thread once it has answered the
preflight, beside the stages that measure nothing; a stage that measures throughput starts only after it."""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.events import StageFinished, Verdict
from rigcheck.engine.run.event_pipe import receive_event
from rigcheck.engine.run.order import StageOrder
from rigcheck.engine.run.warm_pool import WarmChild, child_environment, start_warm
from rigcheck.engine.stage import StageSpec
from stage_infos import TESTS_DIR


def seen(child: WarmChild, stage: str, log: Path) -> dict[str, bool]:
    assert child.send(StageOrder(StageSpec(stage), "fake_stages:preload_seen", False, str(log)))
    numbers: dict[str, bool] = {}
    while True:
        event = receive_event(child.events)
        if isinstance(event, Verdict):
            numbers = event.numbers
        if isinstance(event, StageFinished):
            return numbers


def test_the_import_runs_beside_probe_and_is_done_before_a_throughput_stage(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    child = start_warm(sys.executable, child_environment(str(TESTS_DIR)), tmp_path, log, "answer")
    try:
        assert child.events.poll(120) and b"RIGCHECK-PYTHON" in child.events.recv_bytes()
        probe = seen(child, "probe", log)  # sent at once: the import (seconds) is still going
        matmul = seen(child, "matmul", log)
        unknown = seen(child, "not-a-stage-of-ours", log)
    finally:
        child.close()
    assert probe == {"alive": True, "loaded": False}, log.read_text()
    assert matmul == {"alive": False, "loaded": True}  # waited for: no import of ours beside a figure
    assert unknown == {"alive": False, "loaded": True}
