"""The one judge's record at its edges (engine/trust/judge.py): the launch-bound note's microseconds, a clock reason
that is the board's own (never outside the hardware), and a window with no sample count against the policy's
least. Expected values written out by hand."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.events import Measurement, Trust
from rigcheck.engine.trust.judge import judge
from rigcheck.engine.trust.policy import TrustPolicy

QUIET: dict[str, Any] = {"samples": 9, "window_s": 1.0, "host_cpus": 8, "host_others_cpus": 0.0}


def figure(**params: Any) -> Measurement:
    base = {"dtype": "bf16", "m": 4096, "bound": "compute", "spread_rel": 0.01, "gpu_name": "NVIDIA H200"} | params
    return Measurement("matmul", "matmul bf16 4096", 700.0, "TFLOP/s", 1.0, 20, "cuda:0", base, {}, t=time.time())


def test_the_launch_bound_note_gives_one_call_in_microseconds_to_a_tenth() -> None:
    # 12.250006 us rounds up to 12.3, 12.3499995 us down to 12.3: a millionth off either way would show
    for seconds in (1.2250006e-5, 1.23499995e-5):
        judged = judge(QUIET, figure(launch_bound=True, median_s=seconds))
        assert judged.trust is Trust.TRUSTED
        assert judged.notes == ["launch-bound: one call takes 12.3 us, near the host's launch overhead"]
    bare = judge(QUIET, figure(launch_bound=True))
    assert bare.notes == ["launch-bound: one call takes 0.0 us, near the host's launch overhead"]


def test_a_clock_reason_is_the_boards_own_never_outside_the_hardware() -> None:
    judged = judge(QUIET | {"mem_clock_ratio": 0.5}, figure(bound="memory"))
    assert judged.trust is Trust.SUSPECT
    (reason,) = judged.reasons
    assert reason.startswith("memory clock at 50% of max")
    assert (reason.kind, reason.outside, reason.numbers) == ("clocks", False, {"mem_clock_ratio": 0.5})
    assert not judged.outside_hardware and judged.stored()["trust_outside"] == []


def test_a_window_with_no_sample_count_has_none() -> None:
    window = {k: v for k, v in QUIET.items() if k not in ("samples", "window_s")}
    one = judge(window, figure(), TrustPolicy(min_samples=1))
    assert one.trust is Trust.UNJUDGED and one.reasons == ["too short to judge: 0 telemetry samples in 0.0 s"]
    assert one.reasons[0].numbers == {"samples": 0.0}
    assert judge(window, figure(), TrustPolicy(min_samples=0)).trust is Trust.TRUSTED
    # the edge itself: as many samples as the policy asks for is enough, one fewer is not
    assert judge(QUIET | {"samples": 3}, figure()).trust is Trust.TRUSTED
    two = judge(QUIET | {"samples": 2, "window_s": 0.25}, figure())
    assert two.trust is Trust.UNJUDGED and two.reasons == ["too short to judge: 2 telemetry samples in 0.25 s"]
