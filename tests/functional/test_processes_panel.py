"""The Processes tab and the host's own clocks, in the real app with fake telemetry."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeGpuProcess, FakeNvml, FakeSampler
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.widgets.processes_panel import processes_lines

OWN = 4000  # rigcheck's stage child: on the GPU, but never listed as another process


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def contended_samples(count: int = 20) -> list[Sample]:
    fake = FakeNvml(
        bus_ids=(b"00000000:1B:00.0", b"00000000:DB:00.0"),
        processes={
            0: [
                FakeGpuProcess(OWN, "python3", 20 * 2**30, sm=60.0),
                FakeGpuProcess(900, "rival-train", 3 * 2**30, sm=35.0),
            ]
        },
    )
    source = NvmlSource(fake, name_of=fake.process_name)
    host = HostSample(
        cpus=2,
        load1=1.5,
        busy_cpus=1.9,
        own_cpus=0.9,
        own_pids=(OWN,),
        top_others=(ProcessUse(500, "burn", cpus=0.95), ProcessUse(501, "editor", cpus=0.06)),
    )
    return [Sample(1_000_000.0 + i * 0.5, host, tuple(source.read())) for i in range(count)]


def test_lines_leave_out_own_pids_and_say_when_a_gpu_is_free() -> None:
    text = "\n".join(line for line, _ in processes_lines(contended_samples(1)[0]))
    assert "rival-train" in text and "3.0 GiB" in text and "35%" in text
    assert str(OWN) not in text
    assert "GPU 1 NVIDIA H200 0000:db:00.0: no other process" in text
    assert text.index("burn") < text.index("editor")


def test_a_quiet_host_says_so() -> None:
    quiet = Sample(1.0, HostSample(cpus=16, load1=0.1, busy_cpus=0.2, own_cpus=0.1))
    text = "\n".join(line for line, _ in processes_lines(quiet))
    assert "no GPU telemetry" in text and "no other process used 0.05 CPUs or more (of 16)" in text


def test_a_figure_without_a_process_list_says_so() -> None:
    figure = {"kind": "measurement", "name": "matmul fp32 4096", "device": "cuda:0", "conditions": {}}
    (first, marked), *_ = processes_lines(contended_samples(1)[0], figure)
    assert first == "during matmul fp32 4096 on cuda:0: no process list stored with this figure" and not marked


async def test_processes_tab_by_key_and_marks_what_ran_during_the_figure(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(contended_samples()), device="cuda:0")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("o")
        await pilot.pause(0.3)
        assert app.query_one("#bottom").active == "tab-processes"
        panel = app.query_one("#processes")
        assert "rival-train" in panel.plain and "burn" in panel.plain and "*" not in panel.plain
        conditions = {
            "trust": "SUSPECT",
            "other_processes": [{"pid": 500, "name": "burn", "cpus": 0.95, "gpu_memory": None}],
        }
        app.query_one("#results").add(
            {
                "kind": "measurement",
                "stage": "matmul",
                "name": "matmul bf16 4096",
                "value": 700.0,
                "unit": "TFLOP/s",
                "device": "cuda:0",
                "conditions": conditions,
            }
        )
        await pilot.pause(0.2)
        lines = panel.plain.splitlines()
        assert lines[0] == "during matmul bf16 4096 on cuda:0: burn (pid 500, 0.95 CPUs)"
        marked = [line for line in lines if line.startswith("*")]
        assert len(marked) == 1 and "500" in marked[0] and "burn" in marked[0]


async def test_clocks_panel_on_a_cpu_only_host_labels_the_cpu_readings(tmp_path: Path) -> None:
    host = HostSample(
        cpus=8,
        load1=0.5,
        busy_cpus=1.0,
        own_cpus=0.2,
        cpu_mhz=3200.0,
        cpu_max_mhz=5100.0,
        temperature_c=71.0,
        package_power_w=45.5,
    )
    samples = [Sample(1_000_000.0 + i * 0.5, host) for i in range(40)]
    notes = ("nvml: NVMLError_LibraryNotFound: NVML Shared Library Not Found",)
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(samples, notes), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.4)
        spark = app.query_one("#clocks-spark").plain.splitlines()
        assert spark[0].startswith("CPU ") and spark[0].endswith("3200 MHz")
        assert spark[1].startswith("CPU C") and spark[1].endswith("71 C")
        assert spark[2].startswith("CPU W") and spark[2].endswith("45.5 W")
        assert app.query_one("#clocks-info").plain == "CPU 3200/5100 MHz  pkg 71 C  45.5 W"
        assert "nvml" not in app.query_one("#clocks-info").plain


async def test_clocks_panel_names_what_the_host_cannot_read(tmp_path: Path) -> None:
    host = HostSample(cpus=2, load1=0.5, busy_cpus=0.3, own_cpus=0.1, cpu_mhz=2596.0)
    samples = [Sample(1.0 + i, host) for i in range(5)]
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(samples), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.4)
        assert app.query_one("#clocks-info").plain == "CPU 2596 MHz (no temp, power)"
        assert app.query_one("#clocks-host").plain == "no GPU telemetry: no GPU found"
    app = RigcheckApp(Store(tmp_path / "s2.db"), FakeSampler(samples), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.4)
        assert "not readable: temp, power" in app.query_one("#clocks-spark").plain


async def test_beside_a_gpu_the_cpu_package_power_has_a_line(tmp_path: Path) -> None:
    """An APU: the CPU and the GPU share one power budget, so the CPU's package power is shown too."""
    from fakes import FakeAmdModule
    from rigcheck.engine.telemetry.amdgpu import AmdGpuInfoSource

    gpus = tuple(AmdGpuInfoSource(FakeAmdModule()).read())
    host = HostSample(
        cpus=32, load1=10.7, busy_cpus=11.0, own_cpus=1.0, cpu_mhz=4100.0, temperature_c=80.0, package_power_w=61.0
    )
    samples = [Sample(1_000_000.0 + i * 0.5, host, gpus) for i in range(20)]
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(samples), device="cuda:0")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.4)
        lines = app.query_one("#clocks-spark").plain.splitlines()
        assert [line.split()[0] for line in lines[:3]] == ["SM", "temp", "power"]
        assert lines[3].startswith("CPU W") and lines[3].endswith("61.0 W")
    app = RigcheckApp(Store(tmp_path / "s2.db"), FakeSampler(samples), device="cuda:0")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.4)
        assert app.query_one("#clocks-host").plain == "CPU 4100 MHz  pkg 80 C  61.0 W"
