"""Issue 31, items 1 and 6: a GPU's other users that rigcheck cannot see (another container or PID namespace)
make a figure SUSPECT when they worked; a process that only holds memory, with evidence that it did no work,
leaves the figure TRUSTED with a note. Driven through the compiled stand-in NVML (tests/fake_nvml_lib.c),
whose FAKE_NVML_SCENE picks a quiet GPU, one used from another namespace, or an idle 120 GiB holder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fakes import build_fake_nvml
from rigcheck.engine.events import Measurement
from rigcheck.engine.hw import nvml as hw_nvml
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, Sample
from rigcheck.engine.trust import unseen
from rigcheck.engine.trust.conditions import ConditionsAnnotator
from rigcheck.engine.trust.unseen_evidence import SETTLE_S

MIB, GIB = 2**20, 2**30
OWN = 4242  # rigcheck's own stage child in every scene
HOST = HostSample(cpus=32, load1=1.0, busy_cpus=1.0, own_cpus=1.0, own_pids=(OWN,))
START, END = 1000.0, 1000.4


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_nvml(tmp_path_factory.mktemp("nvml"))


@pytest.fixture
def scene(library: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Reads the first GPU of the stand-in library in one scene."""
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(library))

    def read(name: str, visible=None) -> GpuSample:  # type: ignore[no-untyped-def]
        monkeypatch.setenv("FAKE_NVML_SCENE", name)
        source = NvmlSource(name_of=lambda pid: f"p{pid}", clock=lambda: 1000.0, visible=visible)
        first, _ = source.read()
        source.close()
        return first

    return read


class Buffer:
    """The sampler's ring buffer, as the annotator reads it."""

    interval = 0.1

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = sorted(samples, key=lambda s: s.t)

    def window(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in self.samples if t0 <= s.t <= t1]


def during(gpu: GpuSample, n: int = 5) -> list[Sample]:
    return [Sample(START + i * 0.1, HOST, (gpu,)) for i in range(n)]


def before(
    gpu: GpuSample, utilization: float, n: int = 4, power: float = 90.0, keep: tuple[int, ...] = ()
) -> list[Sample]:
    """The GPU before the stage child made its context: rigcheck holds nothing there (`keep`: others that stay)."""
    procs = tuple(p for p in gpu.processes if p.pid in keep)
    idle = replace(
        gpu,
        processes=procs,
        process_pids=tuple(p.pid for p in procs),
        sm_by_pid=(),
        utilization_pct=utilization,
        power_w=power,
    )
    return [Sample(START - 5.0 + i * 0.5, HOST, (idle,)) for i in range(n)]


def judged(samples: list[Sample], **params: object) -> dict:
    base = {"bound": "compute", "threads": 1, "spread_rel": 0.01, "timer": "events", "pci_bus_id": "0000:18:00.0"}
    figure = Measurement(
        "matmul", "bf16 4096", 770.0, "TFLOP/s", 1.0, 20, "cuda:0", {**base, **params}, t_start=START, t=END
    )
    return ConditionsAnnotator(Buffer(samples))(figure).conditions


def test_the_stand_in_driver_shows_each_scene(scene) -> None:  # type: ignore[no-untyped-def]
    quiet, other, holder = scene("quiet"), scene("unseen"), scene("holder")
    assert (quiet.memory_unlisted, quiet.sm_by_pid) == (40 * MIB, ((OWN, 55.0),))
    assert [p.pid for p in other.processes] == [OWN] and other.memory_unlisted == 874 * MIB
    assert other.sm_by_pid == ((OWN, 55.0), (9999, 100.0))  # sampled at work under a pid no list shows
    assert [(p.pid, p.gpu_memory) for p in holder.processes] == [(OWN, GIB), (5151, 120 * GIB), (6161, 64 * MIB)]
    assert holder.memory_unlisted == 0 and holder.unseen_pids == ()  # 6161 came from the graphics list
    assert scene("holder", visible=lambda pid: pid != 5151).unseen_pids == (5151,)


def test_a_quiet_gpu_stays_trusted(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("quiet")
    conditions = judged(before(gpu, 0.0) + during(gpu))
    assert conditions["trust"] == "TRUSTED", conditions["trust_reasons"]
    assert conditions["gpu_unlisted_memory"] == 40 * MIB and "unseen_user" not in conditions
    assert conditions["gpu_idle_before"]["utilization_pct"] == 0.0


def test_a_process_in_another_namespace_at_work_is_suspect_and_named(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("unseen")
    conditions = judged(before(gpu, 100.0, power=650.0) + during(gpu))
    assert conditions["trust"] == "SUSPECT"
    assert conditions["other_processes"] == []  # as on the H200: no process of its own list to name
    (reason,) = conditions["trust_reasons"]
    assert reason.startswith(
        "another process that rigcheck cannot see (another container or PID namespace) is using cuda:0: 874 MiB, "
        "SM use 100% (pid 9999); GPU busy 100%, 650 W while rigcheck had no work on it, 4 s before this figure; next: "
    )
    assert conditions["unseen_user"]["worked"] is True


def test_without_per_process_use_the_gpu_before_the_stage_decides(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("unseen"), sm_by_pid=None)  # a driver that gives no per-process use
    busy = judged(before(gpu, 100.0) + during(gpu))
    assert busy["trust"] == "SUSPECT" and "GPU busy 100%" in busy["trust_reasons"][0]
    idle = judged(before(gpu, 0.0) + during(gpu))
    assert idle["trust"] == "TRUSTED"
    assert idle["notes"][-1].startswith(
        "another process that rigcheck cannot see (another container or PID namespace) holds 874 MiB on cuda:0 "
        "but did no work (GPU idle (0%) while rigcheck had no work on it"
    )
    unknown = judged(during(gpu))  # no moment before the figure when rigcheck had no work there
    assert unknown["trust"] == "SUSPECT" and "whether it worked could not be told" in unknown["trust_reasons"][0]


@pytest.mark.parametrize(
    ("unlisted", "trust"), [(unseen.UNLISTED_MIN - 1, "TRUSTED"), (unseen.UNLISTED_MIN, "SUSPECT")]
)
def test_unlisted_memory_counts_from_its_threshold(scene, unlisted: int, trust: str) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("quiet"), memory_unlisted=unlisted, sm_by_pid=None)
    assert judged(during(gpu))["trust"] == trust


@pytest.mark.parametrize(("utilization", "trust"), [(49.0, "TRUSTED"), (50.0, "SUSPECT")])
def test_busy_before_the_stage_counts_from_half(scene, utilization: float, trust: str) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("quiet")  # nothing unlisted: only the GPU's busy time while rigcheck had no work says so
    assert judged(before(gpu, utilization) + during(gpu))["trust"] == trust


def test_busy_readings_too_near_rigcheck_own_work_are_its_own(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("quiet")
    working = Sample(START - 5.0, HOST, (replace(gpu, utilization_pct=100.0),))
    lagging = replace(gpu, processes=(), process_pids=(), sm_by_pid=(), utilization_pct=100.0)
    near = [Sample(START - 5.0 + SETTLE_S - 0.1 + i * 0.02, HOST, (lagging,)) for i in range(3)]
    assert judged([working, *near, *during(gpu)])["trust"] == "TRUSTED"  # utilization lags rigcheck's own work
    far = [Sample(START - 5.0 + SETTLE_S + 0.1 + i * 0.02, HOST, (lagging,)) for i in range(3)]
    assert judged([working, *far, *during(gpu)])["trust"] == "SUSPECT"


def test_an_idle_memory_holder_leaves_the_figure_trusted_with_a_note(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("holder")
    conditions = judged(during(gpu))
    assert conditions["trust"] == "TRUSTED", conditions["trust_reasons"]
    assert [p["pid"] for p in conditions["other_gpu_processes"]] == [5151, 6161]  # still named
    assert [p["pid"] for p in conditions["gpu_idle_holders"]] == [5151, 6161]
    assert conditions["notes"][0] == (
        "p5151 (pid 5151) holds 120.0 GiB on cuda:0 but did no work (SM use 0% in 5 per-process sample(s) of this "
        "figure's window); it may start at any moment"
    )


def test_a_holder_that_worked_is_still_a_reason(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("holder")
    working = replace(gpu, sm_by_pid=((OWN, 55.0), (5151, 30.0)))
    conditions = judged([*during(gpu, 3), Sample(END, HOST, (working,))])
    assert conditions["trust"] == "SUSPECT"
    assert conditions["trust_reasons"][0].startswith("1 other process(es) on the GPU: p5151 (pid 5151, 120.0 GiB)")
    assert [p["pid"] for p in conditions["gpu_idle_holders"]] == [6161]


def test_holding_without_evidence_of_idleness_is_not_trusted(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("holder"), sm_by_pid=None)
    assert judged(during(gpu))["trust"] == "SUSPECT"  # no per-process use, no idle moment before
    conditions = judged(before(gpu, 0.0, keep=(5151, 6161)) + during(gpu))
    assert conditions["trust"] == "TRUSTED"
    assert "GPU idle while rigcheck had no work on it, before this figure" in conditions["notes"][0]


def test_a_holder_in_another_namespace_sampled_idle_is_a_note(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("holder", visible=lambda pid: pid != 5151)
    conditions = judged(during(gpu))
    assert conditions["trust"] == "TRUSTED", conditions["trust_reasons"]
    assert conditions["gpu_unseen_processes"] == [
        {"pid": 5151, "gpu_memory": 120 * GIB, "sm_pct": None, "listed": True}
    ]
    assert "holds 120.0 GiB on cuda:0 but did no work (SM use 0% in 5 per-process sample(s))" in conditions["notes"][0]


def test_a_driver_that_lists_none_of_rigcheck_own_is_no_evidence(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("quiet"), processes=(), process_pids=(), sm_by_pid=None, memory_unlisted=GIB + 40 * MIB)
    conditions = judged(before(gpu, 100.0) + during(gpu))  # its own 1 GiB and its own busy moments
    assert conditions["trust"] == "TRUSTED", conditions["trust_reasons"]
    assert conditions["gpu_list_blind"] is True and "gpu_idle_before" not in conditions
    assert conditions["notes"][-1].startswith("NVML lists none of rigcheck's own processes on cuda:0")


def probe(utilization: float, age_s: float = 2.0) -> dict:
    """A figure's span readings with the stage child's idle probe of the GPU."""
    idle = {"samples": 3, "utilization_pct": utilization, "utilization_max_pct": utilization, "power_w": 650.0}
    return {"sm_mhz": [1980, 1980], "max_sm_mhz": 1980, "reasons": [], "idle_probe": {**idle, "age_s": age_s}}


def test_behind_blind_lists_the_child_idle_probe_still_sees_another_container_at_work(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("quiet"), processes=(), process_pids=(), sm_by_pid=None, memory_unlisted=GIB + 874 * MIB)
    busy = judged(during(gpu), span_clocks=probe(100.0))
    assert busy["trust"] == "SUSPECT"
    assert busy["trust_reasons"][0].startswith(
        "another process that rigcheck cannot see (another container or PID namespace) is using cuda:0: GPU busy "
        "100%, 650 W while rigcheck had no work on it, 2 s before this figure; next: "
    )
    assert busy["gpu_idle_before"]["source"] == "stage child"
    assert judged(during(gpu), span_clocks=probe(0.0))["trust"] == "TRUSTED"


def test_the_fresher_look_at_the_idle_gpu_decides(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = scene("quiet")
    stale_idle = before(gpu, 0.0)  # 3.5-5 s before the figure
    assert judged(stale_idle + during(gpu), span_clocks=probe(100.0, age_s=1.0))["trust"] == "SUSPECT"
    assert judged(stale_idle + during(gpu), span_clocks=probe(100.0, age_s=30.0))["trust"] == "TRUSTED"


def test_a_gpu_whose_reader_lists_no_processes_is_not_judged_by_them(scene) -> None:  # type: ignore[no-untyped-def]
    gpu = replace(scene("quiet"), source="amdgpu", processes=(), process_pids=(), sm_by_pid=None, memory_unlisted=None)
    conditions = judged(before(gpu, 100.0) + during(gpu))  # rigcheck's own work: nothing says whose it is
    assert conditions["trust"] == "TRUSTED" and "gpu_idle_before" not in conditions
    assert "gpu_list_blind" not in conditions
