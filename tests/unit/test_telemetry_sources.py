"""Each telemetry reader, fed a fake backend: units normalised, missing sensors N/A, never an exception."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fakes import FAKE_CLOCK, FakeAmdModule, FakeNvml, FakePsutil, amd_sysfs_tree
from rigcheck.engine.telemetry.amdgpu import AmdGpuInfoSource
from rigcheck.engine.telemetry.host import HostSource
from rigcheck.engine.telemetry.nvml import NvmlSource, decode_reasons
from rigcheck.engine.telemetry.sample import na
from rigcheck.engine.telemetry.sources import available_gpu_sources
from rigcheck.engine.telemetry.sysfs import AmdSysfsSource, parse_dpm


def test_nvml_units_and_reasons() -> None:
    (gpu,) = NvmlSource(FakeNvml(sm_clock=1200, reasons=0x4 | 0x40, pids=(4242,))).read()
    assert gpu.name == "NVIDIA H200" and gpu.sm_clock_mhz == 1200 and gpu.max_sm_clock_mhz == 1980
    assert gpu.power_w == pytest.approx(126.37) and gpu.power_limit_w == pytest.approx(700.0)
    assert gpu.temperature_c == 39 and gpu.utilization_pct == 97
    assert gpu.memory_total == 150_754_820_096
    assert gpu.throttle == ("power cap", "hardware thermal slowdown")
    assert gpu.process_pids == (4242,)


def test_nvml_missing_sensors_read_as_not_available() -> None:
    (gpu,) = NvmlSource(FakeNvml(broken={"power", "temperature", "clock"})).read()
    assert gpu.power_w is None and gpu.temperature_c is None and gpu.sm_clock_mhz is None
    assert na(gpu.power_w, unit=" W") == "N/A" and na(39.0, unit=" C") == "39 C"


def test_decode_reasons() -> None:
    assert decode_reasons(0) == () and decode_reasons(None) == ()
    assert decode_reasons(0x1 | 0x80) == ("idle", "power brake")


def test_pyamdgpuinfo_hz_to_mhz_and_load_to_percent() -> None:
    (gpu,) = AmdGpuInfoSource(FakeAmdModule()).read()
    assert gpu.sm_clock_mhz == pytest.approx(2084.0) and gpu.max_sm_clock_mhz == pytest.approx(2900.0)
    assert gpu.utilization_pct == pytest.approx(42.0)
    assert gpu.power_w is None  # the fake has no average power sensor, as on some APUs
    assert gpu.gtt_total == int(94.94 * 2**30) and gpu.temperature_c == 61.0


def test_sysfs_reader_on_a_fake_tree(tmp_path: Path) -> None:
    (gpu,) = AmdSysfsSource(amd_sysfs_tree(tmp_path)).read()
    assert gpu.sm_clock_mhz == 1059 and gpu.max_sm_clock_mhz == 2900
    assert gpu.temperature_c == 55.0 and gpu.power_w == 35.0 and gpu.utilization_pct == 87
    assert gpu.gtt_used == 5 * 2**30 and gpu.memory_total == 512 * 2**20


def test_sysfs_reader_refuses_a_host_without_amd(tmp_path: Path) -> None:
    (tmp_path / "drm").mkdir()
    with pytest.raises(RuntimeError):
        AmdSysfsSource(tmp_path / "drm")


def test_parse_dpm() -> None:
    assert parse_dpm("0: 500Mhz\n1: 800Mhz *\n") == (800.0, 800.0)
    assert parse_dpm("") == (None, None)


def test_host_splits_own_from_others() -> None:
    host = HostSource(FakePsutil(), root_pid=100, clock=lambda: FAKE_CLOCK[0])
    host.read()  # first reading of each process only primes it
    FAKE_CLOCK[0] += 0.1
    sample = host.read()
    assert sample.cpus == 4 and sample.busy_cpus == pytest.approx(3.0)
    assert sample.own_cpus == pytest.approx(0.5) and sample.others_cpus == pytest.approx(2.5)
    assert sample.load1 == 3.1 and sample.cpu_mhz == 3200.0 and sample.temperature_c == 71.5


def test_factory_keeps_what_starts_and_notes_what_does_not() -> None:
    closed = []

    class Sysfs:
        vendor = "AMD"

        def close(self) -> None:
            closed.append(True)

    def nvml() -> NvmlSource:
        raise OSError("NVML Shared Library Not Found")

    def amd() -> AmdGpuInfoSource:
        return AmdGpuInfoSource(FakeAmdModule())

    sources, notes = available_gpu_sources((nvml, amd, Sysfs))
    assert [type(s).__name__ for s in sources] == ["AmdGpuInfoSource"]
    assert closed == [True]  # the sysfs fallback is dropped when pyamdgpuinfo works
    assert notes == ["no NVIDIA driver"]  # in words, not NVML's error name


def test_a_reader_that_fails_for_the_usual_reason_is_said_in_words() -> None:
    from rigcheck.engine.telemetry.sources import note_in_words

    for raw in (
        "nvml: NVMLError_LibraryNotFound: NVML Shared Library Not Found",
        "nvml: RuntimeError: NVML not usable: libnvidia-ml.so.1: cannot open shared object file: No such file",
    ):
        assert note_in_words(raw) == "no NVIDIA driver"
    assert note_in_words("nvml: RuntimeError: NVML not usable: Driver Not Loaded") == (
        "an NVIDIA driver library but no driver loaded"
    )
    assert note_in_words("amdgpuinfo: FileNotFoundError: [Errno 2] No such file or directory: '/dev/dri/'") == (
        "no AMD GPU"
    )
    odd = "nvml: RuntimeError: NVML cannot list the GPUs: Insufficient Permissions"
    assert note_in_words(odd) == odd  # anything else keeps the reader's own words


def test_a_sampler_paced_slower_keeps_sampling_at_the_new_interval() -> None:
    from rigcheck.engine.telemetry.sample import HostSample
    from rigcheck.engine.telemetry.sampler import Sampler

    class CountingHost:
        reads = 0

        def read(self) -> HostSample:
            CountingHost.reads += 1
            return HostSample(cpus=2, load1=0.0, busy_cpus=0.0, own_cpus=0.0)

    sampler = Sampler(interval=0.02, host=CountingHost(), gpus=[]).start()  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 30
        while CountingHost.reads < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        sampler.pace(0.4)
        time.sleep(0.1)  # the tick in flight ends
        before, t0 = CountingHost.reads, time.monotonic()
        while CountingHost.reads < before + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
    finally:
        sampler.stop()
    assert sampler.interval == 0.4 and CountingHost.reads >= before + 2  # it goes on after the change
    assert elapsed >= 0.35  # two reads at the new pace take at least one interval, not two old ticks
