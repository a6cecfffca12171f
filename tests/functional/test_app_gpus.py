"""The app on a host with several GPUs: every GPU's clock at a glance, a key to follow another GPU, and
each GPU's progress in a stage measured on all of them at once."""

from __future__ import annotations

from pathlib import Path

from fakes import FakeNvml, FakeSampler
from rigcheck.engine.events import Progress
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.widgets.clocks_panel import ClocksPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel


def two_gpu_samples(count: int = 40) -> list[Sample]:
    nvml = FakeNvml(bus_ids=(b"00000000:1B:00.0", b"00000000:2C:00.0"))
    host = HostSample(cpus=32, load1=1.0, busy_cpus=1.0, own_cpus=1.0)
    return [Sample(1_000_000.0 + i * 0.5, host, tuple(NvmlSource(nvml).read())) for i in range(count)]


async def test_clocks_follow_the_chosen_gpu_and_show_every_gpu(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(two_gpu_samples()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert app.device == "all"  # every GPU by default
        clocks = app.query_one(ClocksPanel)
        text = "\n".join(w.plain for w in clocks.query("LiveText"))
        assert ">0:1980/39 1:1980/39" in text
        assert "GPU 0 throttle" in text
        await pilot.press("g")
        await pilot.pause(0.5)
        assert clocks.gpu_index == 1
        text = "\n".join(w.plain for w in clocks.query("LiveText"))
        assert "GPU 1 throttle" in text and " 0:1980/39>1:1980/39" in text


async def test_each_gpus_progress_shows_in_a_stage_run_on_all_at_once(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(two_gpu_samples()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        # as the app shows progress events it follows from the store
        app.show(Progress("matmul", 1, 2, "bf16 4096", device="cuda:0"))
        app.show(Progress("matmul", 1, 4, "bf16 4096", device="cuda:1"))
        await pilot.pause(0.3)
        step = app.query_one("#stages-expected").render()
        assert "matmul 0:50% 1:25%" in str(step)
        assert app.query_one(StagesPanel).per_device["matmul"] == {"cuda:0": 0.5, "cuda:1": 0.25}


async def test_one_gpu_needs_no_switching(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(two_gpu_samples()[:1]), gpus=("cuda:0",))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert app.device == "cuda:0"
        assert app._device_choices() == ["cpu", "cuda:0"]


async def test_the_device_tab_shows_the_links_matrices(tmp_path: Path) -> None:
    from rigcheck.engine.events import Facts
    from rigcheck.engine.stages.links.topology import render

    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(two_gpu_samples()))
    topology = render(["cuda:0", "cuda:1"], [["X", "NV18"], ["NV18", "X"]])
    p2p = render(["cuda:0", "cuda:1"], [["-", "390.0"], ["391.1", "-"]])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        app.show(Facts("links", {"topology": {"drawn": topology}, "p2p": {"drawn": p2p}}))
        await pilot.pause(0.2)
        text = str(app.query_one("#device-text").render())
        assert "links between GPUs:" in text and "NV18" in text
        assert "peer-to-peer copies, GB/s one way:" in text and "391.1" in text
