"""Through the real runner and a real stage child: a child's FAIL on a figure that another process disturbed is
restated INCONCLUSIVE in the parent, the stage is INCONCLUSIVE and the run exits 7, not 1; the same FAIL on a
figure measured clean stays a FAIL and the run exits 1."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, StageFinished, Status, Verdict
from rigcheck.engine.exits import EXIT_FAIL, EXIT_INCONCLUSIVE
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan

STAGE_PY = '''
"""A figure and the child's FAIL on it, as the matmul child words one (the rule only, the figure named)."""

from rigcheck.engine.events import Measurement, Status, Verdict


def best_fails(context):
    params = {"dtype": "fp32", "bound": "compute", "broken": None}
    yield Measurement(context.spec.stage, "matmul fp32 4096", 25.0, "TFLOP/s", 0.1, 20, "cuda:0", params)
    numbers = {"figure": "matmul fp32 4096", "reference": 51.0, "reference_cited": "the H200's 51"}
    yield Verdict(context.spec.stage, "best-fp32", Status.FAIL, "best fp32: 25; below half of the reference",
                  numbers, device="cuda:0")
'''

RIVAL = "1 other process(es) on the GPU: python3 (pid 825); next: `nvidia-smi` lists them"


def run_stage(tmp_path: Path, conditions: dict[str, Any]) -> tuple[int, list[Any]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "best_stage.py").write_text(textwrap.dedent(STAGE_PY))
    info = StageInfo("bestcheck", "best_stage:best_fails", "a best-of FAIL", {"quick": 240.0}, (str(tmp_path),))
    info = replace(info, fingerprint=False)
    heard: list[Any] = []

    def annotate(m: Measurement) -> Measurement:
        return replace(m, conditions={"samples": 10, "gpu_name": "NVIDIA H200", **conditions})

    run = Run(RunPlan(1, RunRequest((info,), "cuda:0", "quick"), tmp_path / "logs"), [heard.append], annotate)
    run.start()
    assert run.wait(300), "the stage child did not finish"
    return run.exit_code, heard


@pytest.mark.parametrize(
    ("conditions", "status", "code", "words"),
    [
        (
            {
                "trust": "SUSPECT",
                "trust_reasons": [RIVAL],
                "trust_outside": [RIVAL],
                "other_gpu_processes": [{"pid": 825, "name": "python3", "gpu_memory": None}],
            },
            Status.INCONCLUSIVE,
            EXIT_INCONCLUSIVE,
            "could not be judged: 1 other process(es) on the GPU: python3 (pid 825); next: stop pid 825",
        ),
        (
            {"trust": "TRUSTED", "trust_reasons": [], "clock_ratio": 0.6, "throttle": ["power cap"]},
            Status.FAIL,
            EXIT_FAIL,
            "likely cause: SM clock at 60% of max (power cap)",
        ),
    ],
)
def test_someone_elses_load_never_fails_the_run(
    tmp_path: Path, conditions: dict[str, Any], status: Status, code: int, words: str
) -> None:
    exit_code, heard = run_stage(tmp_path, conditions)
    (verdict,) = [e for e in heard if isinstance(e, Verdict) and e.check == "best-fp32"]
    assert verdict.status == status and words in verdict.explanation
    (finished,) = [e for e in heard if isinstance(e, StageFinished)]
    assert finished.status == status and exit_code == code
