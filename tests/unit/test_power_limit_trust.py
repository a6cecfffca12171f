"""Issue 20, item 1: a GPU at its power cap with the board's default limit is the normal state of a heavy load
(TRUSTED, with a note); a lowered limit, a thermal or hardware slowdown, a rival process or a clock below
this GPU's earlier clean runs is SUSPECT, each naming the next thing to run."""

from __future__ import annotations

from fakes import FakeNvml
from rigcheck.engine.events import Measurement
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.power_limit import power_limit_state
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.engine.trust.conditions import judge, summarise

POWER_CAP, SW_THERMAL, HW_SLOWDOWN, POWER_BRAKE = 0x4, 0x20, 0x8, 0x80


def h200(clock: int = 1470, reasons: int = POWER_CAP, n: int = 6, **nvml: object) -> list[Sample]:
    """A burn's window on an H200: bf16 8192 at the power cap, the clock at 74% of max (as every H200 holds)."""
    fake = FakeNvml(sm_clock=clock, reasons=reasons, power=nvml.pop("power", 690_000), **nvml)  # type: ignore[arg-type]
    gpus = tuple(NvmlSource(fake).read())
    host = HostSample(cpus=32, load1=1.0, busy_cpus=1.2, own_cpus=1.0, own_pids=(1,))
    return [Sample(1000.0 + i * 0.5, host, gpus) for i in range(n)]


def burn_figure(seconds: int = 30) -> Measurement:
    params = {"dtype": "bfloat16", "n": 8192, "timer": "device events", "gpu_uuid": "GPU-0"}
    return Measurement("burn", f"burn bfloat16 8192 at {seconds} s", 700.0, "TFLOP/s", None, 50, "cuda:0", params)


def matmul_figure() -> Measurement:
    params = {"bound": "compute", "threads": 1, "spread_rel": 0.01, "timer": "events"}
    return Measurement("matmul", "matmul bf16 8192", 690.0, "TFLOP/s", 7.0, 20, "cuda:0", params)


def test_the_power_limits_come_from_nvml() -> None:
    (gpu,) = NvmlSource(FakeNvml(limit=500_000, default_limit=700_000)).read()
    assert (gpu.power_limit_w, gpu.power_default_limit_w, gpu.power_max_limit_w) == (500.0, 700.0, 700.0)
    (unread,) = NvmlSource(FakeNvml(broken={"default power limit"})).read()
    assert unread.power_default_limit_w is None and unread.power_limit_w == 700.0


def test_the_limit_state_is_default_lowered_or_unknown() -> None:
    assert power_limit_state(700.0, 700.0, 700.0) == "default"
    assert power_limit_state(698.0, 700.0, None) == "default"  # within 1%
    assert power_limit_state(700.0, None, 700.0) == "default"  # at its maximum
    assert power_limit_state(500.0, 700.0, 700.0) == "lowered"
    assert power_limit_state(500.0, None, 700.0) == "unknown"
    assert power_limit_state(None, 700.0, 700.0) == "unknown"


def test_a_burn_at_the_power_cap_with_the_default_limit_is_trusted_with_a_note() -> None:
    for figure in (burn_figure(), matmul_figure()):
        judged = judge(summarise(h200(), 0), figure)
        assert judged.trust == "TRUSTED", judged
        assert judged.notes == [
            "power-limited at 700 W, as this load is on this board (SM clock at 74% of max, 690 of 700 W)"
        ]


def test_a_lowered_power_limit_is_suspect_and_says_how_to_restore_it() -> None:
    judged = judge(summarise(h200(power=495_000, limit=500_000), 0), burn_figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "SM clock at 74% of max under a power limit lowered to 500 W, below this board's default 700 W "
        "(495 of 500 W); next: `sudo nvidia-smi -pl 700` restores it"
    ]
    # a lowered limit the load never reached is said, but is no reason
    cool = judge(summarise(h200(clock=1980, reasons=0, power=300_000, limit=500_000), 0), burn_figure())
    assert cool.trust == "TRUSTED" and cool.notes == ["power limit lowered to 500 W, below this board's default 700 W"]


def test_thermal_and_hardware_slowdowns_are_suspect_at_the_default_limit() -> None:
    hot = judge(summarise(h200(reasons=POWER_CAP | SW_THERMAL), 0), burn_figure())
    assert hot.trust == "SUSPECT"
    assert hot.reasons == [
        "clocks held back by software thermal slowdown; next: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`; "
        "check the fans, the airflow and the inlet temperature"
    ]
    for reason in (HW_SLOWDOWN, POWER_BRAKE):
        judged = judge(summarise(h200(reasons=POWER_CAP | reason), 0), matmul_figure())
        assert judged.trust == "SUSPECT" and "next: `nvidia-smi -q -d PERFORMANCE`" in judged.reasons[0]


def test_a_rival_process_on_the_gpu_is_suspect_and_named() -> None:
    judged = judge(summarise(h200(pids=(1, 4242)), 0), burn_figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "1 other process(es) on the GPU: ? (pid 4242, 0 MiB); next: `nvidia-smi` lists them: stop them or use "
        "another GPU"
    ]


def test_a_clock_below_this_gpus_earlier_clean_runs_is_suspect_even_at_the_default_limit() -> None:
    conditions = summarise(h200(clock=1250), 0)  # 63% of max, at the default limit
    assert judge(conditions, burn_figure(), reference_clocks=[1280.0, 1300.0]).trust == "TRUSTED"
    judged = judge(conditions, burn_figure(), reference_clocks=[1470.0, 1465.0, 1480.0])
    assert judged.trust == "SUSPECT"
    assert judged.reasons[0].startswith("SM clock 1,250 MHz, below the 1,470 MHz this GPU held for the same figure")


def test_a_missing_default_limit_never_makes_a_figure_trusted() -> None:
    unread = {"default power limit", "power limit range"}
    at_max = judge(summarise(h200(broken={"default power limit"}), 0), burn_figure())
    assert at_max.trust == "TRUSTED"  # the limit is the board's maximum: no lower than the default
    unknown = judge(summarise(h200(broken=unread), 0), burn_figure())
    assert unknown.trust == "SUSPECT" and "default power limit could not be read" in unknown.reasons[0]
    assert unknown.reasons[0].endswith("next: `nvidia-smi -q -d POWER`")
    hot = judge(summarise(h200(reasons=POWER_CAP | SW_THERMAL, broken=unread), 0), burn_figure())
    assert hot.trust == "SUSPECT" and any("thermal" in r for r in hot.reasons)


def test_a_clock_far_below_what_a_power_limited_board_holds_is_suspect() -> None:
    judged = judge(summarise(h200(clock=880), 0), burn_figure())  # 44% of max at the default limit
    assert judged.trust == "SUSPECT"
    assert judged.reasons[0].startswith("SM clock at 44% of max under the power cap at the board's default limit")
