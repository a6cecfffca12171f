"""Verify's CPU work beside the device's: the same verdicts as in line, a reference that does not repeat still
stops its dtypes, the optimizer's import runs in a thread of its own, and nothing is left running after."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from rigcheck.engine.events import Progress, Status, Verdict
from rigcheck.engine.models.board_net import BoardNetConfig
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.verify import stage as verify
from rigcheck.engine.stages.verify.host_side import HostSide
from rigcheck.engine.stages.verify.matmul import check_dtype, check_reference, device_matmul_into_poison
from rigcheck.engine.stages.verify.matmul import numpy_float32_matmul as numpy_arm
from rigcheck.engine.stages.verify.model import check_forward_and_gradients

CPU = torch.device("cpu")
SMALL = BoardNetConfig(16, 1)
N, LOW_N, BATCH = 64, 32, 8


def verdicts(host: HostSide) -> list[Verdict]:
    steps = verify.Steps(verify.step_count(CPU, N, LOW_N))
    context = StageContext(StageSpec("verify", "cpu", "quick"))
    events = list(verify._verify_device(context, steps, host, CPU, N, LOW_N, SMALL, BATCH, 30, 0.1))
    host.close()
    assert steps.done == steps.total  # every step announced once, as in line
    assert all(e.done < e.total for e in events if isinstance(e, Progress))
    return [e for e in events if isinstance(e, Verdict)]


def summary(found: list[Verdict]) -> list[tuple[str, Status, dict[str, Any]]]:
    return [(v.check, v.status, v.numbers) for v in found]


def in_line() -> list[Verdict]:
    """The checks one after another, each drawing its inputs as verify did before the host side."""
    generator = torch.Generator().manual_seed(1234)
    found = [check_reference(N, generator), check_reference(LOW_N, generator)]
    for name in ("fp32", "fp16", "bf16"):
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(name, torch.float32)
        size = N if name == "fp32" else LOW_N
        device = device_matmul_into_poison(dtype, CPU)
        found += check_dtype(name, size, "cpu", generator, device, numpy_arm, "numpy float32 (CPU)")
    return found + list(check_forward_and_gradients(SMALL, BATCH, CPU))


def test_the_work_beside_gives_the_verdicts_of_the_work_in_line() -> None:
    beside, alone = verdicts(HostSide(beside=True)), verdicts(HostSide(beside=False))
    assert summary(beside) == summary(alone)
    checked = summary(in_line())
    assert summary(beside)[: len(checked)] == checked  # references, dtypes and the model, number for number
    assert [v.check for v in beside][len(checked) :] == ["model-steps-groupnorm", "model-steps-batchnorm", "model-soak"]


def test_a_reference_that_does_not_repeat_still_skips_its_dtypes_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    def flaky(a: torch.Tensor, b: torch.Tensor) -> tuple[bool, float]:
        return (False, 0.25) if a.shape[0] == N else (True, 0.0)

    monkeypatch.setattr(verify, "repeat_check", flaky)
    found = {v.check: v for v in verdicts(HostSide(beside=True))}
    assert found[f"reference-{N}"].status == Status.FAIL and found[f"reference-{LOW_N}"].status == Status.PASS
    assert found["matmul-fp32"].status == Status.SKIP  # judged against the reference that did not repeat
    assert found["matmul-fp16"].status == Status.PASS and found["matmul-bf16"].status == Status.PASS


def test_a_failure_in_the_thread_is_raised_where_its_result_is_read() -> None:
    for beside in (True, False):
        host = HostSide(beside)
        future = host.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            future.result()
        host.close()


def test_the_import_runs_in_a_thread_of_its_own_and_a_broken_one_is_left_to_the_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rigcheck_probe_good.py").write_text("import threading\nTHREAD = threading.current_thread().name\n")
    (tmp_path / "rigcheck_probe_bad.py").write_text("raise RuntimeError('partial install')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    host = HostSide(beside=True)
    host.start_import("rigcheck_probe_good")
    host.start_import("rigcheck_probe_bad")
    host.wait_imports()
    assert sys.modules["rigcheck_probe_good"].THREAD == "verify-import-rigcheck_probe_good"
    with pytest.raises(RuntimeError, match="partial install"):  # the stage's own import says what is wrong
        __import__("rigcheck_probe_bad")
    host.close()
    del sys.modules["rigcheck_probe_good"]


def test_nothing_of_verify_runs_after_it_stops_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "HostSide", lambda beside: HostSide(beside=True))  # as on a GPU
    context = StageContext(StageSpec("verify", "cpu", "quick"))
    steps = verify.Steps(verify.step_count(CPU, N, LOW_N))
    stage = verify.verify_device(context, steps, CPU, N, LOW_N, SMALL, BATCH, 30, 0.1)
    next(stage)  # the first step's progress
    next(stage)  # the first verdict: the work beside has been handed off and some of it is done
    assert [t for t in threading.enumerate() if t.name.startswith("verify-host")]
    stage.close()  # the consumer stops: the finally waits for the thread and drops the rest
    assert not [t for t in threading.enumerate() if t.name.startswith("verify-")]
