"""Health: fake NVML and sysfs readers report each fault; each gets its verdict beside a clean device."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_health import FakeHealthNvml, amd_health_tree
from fakes import build_fake_nvml
from rigcheck.engine.events import Facts, Status, Verdict
from rigcheck.engine.facts.amd_health import AmdHealthReader, bad_pages, link_gen
from rigcheck.engine.facts.health_model import Missing
from rigcheck.engine.facts.nvidia_health import NvidiaHealthReader
from rigcheck.engine.facts.xid import xids_by_bus
from rigcheck.engine.hw.nvml import Nvml, NvmlFailure, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.stages.health.checks import share_in_words
from rigcheck.engine.stages.health.stage import check, label_for, open_readers, torch_labels

LABELS = {"0000:18:00.0": "cuda:0", "0000:c1:00.0": "cuda:0"}


def no_load(device: str) -> contextlib.AbstractContextManager[bool]:
    return contextlib.nullcontext(False)


def verdicts(nvml: FakeHealthNvml, kernel_log: list[str] | Missing | None = None, load=no_load) -> dict[str, Verdict]:  # type: ignore[no-untyped-def]
    reader = NvidiaHealthReader(nvml, kernel_log=lambda: [] if kernel_log is None else kernel_log)
    events = list(check([reader], [], LABELS, "all", load))
    return {v.check: v for v in events if isinstance(v, Verdict)}


def test_a_clean_h200_passes_every_check_it_offers() -> None:
    found = verdicts(FakeHealthNvml())
    assert {k: v.status for k, v in found.items()} == {
        "ecc": Status.PASS,
        "retired-pages": Status.SKIP,  # Hopper remaps rows: the driver offers no retired pages
        "row-remap": Status.PASS,
        "xid": Status.PASS,
        "pcie": Status.PASS,
        "persistence": Status.PASS,
        "power-limit": Status.PASS,
        "idle-clocks": Status.PASS,
        "partition": Status.PASS,
        "fabric": Status.SKIP,
    }
    assert all(v.device == "cuda:0" for v in found.values())
    assert "PCIe link at Gen5 x16, its maximum" in found["pcie"].explanation
    assert "not supported" in found["retired-pages"].explanation


# the clean H200 is not on an NVSwitch fabric (SKIP); the fabric's clean side is a GPU registered with one
CLEAN_FOR: dict[str, dict] = {"fabric": {"fabric_state": 3}}


@pytest.mark.parametrize(
    ("fault", "check_name", "status", "words"),
    [
        ({"ecc": {(0, 0): 5, (1, 0): 12, (0, 1): 5, (1, 1): 12}}, "ecc", Status.FAIL, "12 uncorrectable ECC error"),
        (
            {"ecc": {(0, 0): 0, (1, 0): 0, (0, 1): 0, (1, 1): 2}},
            "ecc",
            Status.WARN,
            "2 uncorrectable ECC error(s) over",
        ),
        ({"ecc_mode": 0}, "ecc", Status.WARN, "ECC switched off"),
        ({"remap": (0, 3, 1, 0)}, "row-remap", Status.WARN, "row remap pending"),
        ({"remap": (0, 3, 0, 1)}, "row-remap", Status.FAIL, "run out of spare rows"),
        ({"link": (4, 8)}, "pcie", Status.WARN, "Gen4 x8 at idle"),
        ({"power_mw": (450_000, 700_000, 200_000, 700_000)}, "power-limit", Status.WARN, "450 W, below"),
        ({"reasons": 0x1 | 0x20}, "idle-clocks", Status.WARN, "thermal slowdown: it is held down before any work"),
        ({"reasons": 0x1 | 0x8}, "idle-clocks", Status.FAIL, "hardware slowdown: a hardware signal (power supply"),
        ({"persistence": 0}, "persistence", Status.WARN, "persistence mode off"),
        ({"mig": (1, 1)}, "partition", Status.WARN, "MIG on"),
        ({"ecc": {(0, 0): 1000, (1, 0): 0, (0, 1): 1003, (1, 1): 0}}, "ecc", Status.WARN, "corrected 1000 ECC errors"),
        ({"enforced_mw": 500_000}, "power-limit", Status.WARN, "enforces 500 W, below its set limit 700 W"),
        ({"mig": (0, 1)}, "partition", Status.WARN, "MIG disabled, enabled after the next GPU reset"),
        ({"fabric_state": 1}, "fabric", Status.FAIL, "not registered"),
        ({"fabric_state": 2}, "fabric", Status.WARN, "still registering"),
        ({"fabric_state": 3, "fabric_status": 5}, "fabric", Status.FAIL, "(completed, status 5)"),
        ({"missing": ("nvmlDeviceGetTotalEccErrors",)}, "ecc", Status.SKIP, "does not offer"),
        ({"missing": ("pcie",)}, "pcie", Status.SKIP, "does not offer the PCIe link state"),
        ({"missing": ("nvmlDeviceGetPowerManagementDefaultLimit",)}, "power-limit", Status.SKIP, "default"),
        ({"missing": ("nvmlDeviceGetCurrentClocksEventReasons",)}, "idle-clocks", Status.SKIP, "not checked"),
        ({"reasons": 0x4, "utilization": 97}, "idle-clocks", Status.SKIP, "was busy (97% utilization)"),
    ],
)
def test_each_nvidia_fault_gets_its_verdict(fault: dict, check_name: str, status: Status, words: str) -> None:
    clean = verdicts(FakeHealthNvml(**CLEAN_FOR.get(check_name, {})))[check_name]
    faulty = verdicts(FakeHealthNvml(**fault))[check_name]
    assert clean.status == Status.PASS, clean.explanation
    assert faulty.status == status, faulty.explanation
    assert words in faulty.explanation
    assert faulty.explanation.startswith("cuda:0 ")


def test_a_registered_fabric_gpu_and_corrected_errors_below_the_mark_pass() -> None:
    registered = verdicts(FakeHealthNvml(fabric_state=3))["fabric"]
    assert (registered.status, registered.explanation) == (
        Status.PASS,
        "cuda:0 is registered with the NVSwitch fabric manager",
    )
    below = verdicts(FakeHealthNvml(ecc={(0, 0): 999, (1, 0): 0, (0, 1): 999, (1, 1): 0}))["ecc"]
    assert below.status == Status.PASS and "999 corrected since the driver loaded" in below.explanation
    same = verdicts(FakeHealthNvml(enforced_mw=693_000))["power-limit"]  # within 1% of the set limit
    assert same.status == Status.PASS, same.explanation


def test_retired_pages_count_both_causes_where_the_driver_splits_them() -> None:
    from rigcheck.engine.stages.health.checks import retired_pages

    split = SimpleNamespace(retired_pages={"retired_sbe": 3, "retired_dbe": 1, "pending": 0})
    verdict = retired_pages("cuda:0", split)  # type: ignore[arg-type]
    assert (verdict.status, verdict.explanation) == (Status.PASS, "cuda:0 has 4 retired memory page(s), none pending")
    one_cause = SimpleNamespace(retired_pages={"retired_sbe": 2, "pending": 0})  # the other cause not reported
    assert "has 2 retired memory page(s)" in retired_pages("cuda:0", one_cause).explanation  # type: ignore[arg-type]
    pending = SimpleNamespace(retired_pages={"retired_sbe": 3, "retired_dbe": 1, "pending": 1})
    assert "(4 retired so far)" in retired_pages("cuda:0", pending).explanation  # type: ignore[arg-type]


def test_a_downgraded_link_says_what_it_costs() -> None:
    verdict = verdicts(FakeHealthNvml(link=(4, 8)))["pcie"]
    assert verdict.explanation.startswith(
        "cuda:0 PCIe link at Gen4 x8 at idle (an idle GPU may lower its link to save power; it could not be loaded"
    )
    assert "its maximum is Gen5 x16: host-device copies will run at a quarter of the speed" in verdict.explanation
    assert verdict.numbers["share"] == pytest.approx(0.25, abs=0.01)


def test_a_link_that_comes_up_under_load_passes_and_one_that_stays_down_warns() -> None:
    loads: list[str] = []

    def make_load(nvml: FakeHealthNvml):  # type: ignore[no-untyped-def]
        @contextlib.contextmanager
        def load(device: str) -> Iterator[bool]:
            loads.append(device)
            nvml.loaded = True
            yield True
            nvml.loaded = False

        return load

    idle_saver = FakeHealthNvml(link=(1, 16), link_when_loaded=(5, 16))
    assert verdicts(idle_saver, load=make_load(idle_saver))["pcie"].status == Status.PASS
    stuck = FakeHealthNvml(link=(1, 16), link_when_loaded=(3, 16))
    verdict = verdicts(stuck, load=make_load(stuck))["pcie"]
    assert verdict.status == Status.WARN
    assert "Gen3 x16 while copying to it" in verdict.explanation
    assert loads == ["cuda:0", "cuda:0"]
    assert verdicts(FakeHealthNvml(), load=make_load(FakeHealthNvml()))["pcie"].status == Status.PASS
    assert len(loads) == 2  # a link already at its maximum is not loaded


def test_xids_from_the_kernel_log_are_matched_to_their_gpu() -> None:
    lines = [
        "4,812,1,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.",
        "4,813,2,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=99, Graphics Exception",
        "4,814,3,-;NVRM: Xid (PCI:0000:18:00): 13, pid=99, Graphics Exception",
    ]
    assert xids_by_bus(lines) == {"0000:18:00.0": {79: 1, 13: 1}, "0000:3b:00.0": {13: 1}}
    verdict = verdicts(FakeHealthNvml(), kernel_log=lines)["xid"]
    assert verdict.status == Status.FAIL
    assert "XID 13 x1, XID 79 x1 (GPU fell off the bus)" in verdict.explanation
    only_app = verdicts(FakeHealthNvml(), kernel_log=lines[2:])["xid"]
    assert only_app.status == Status.WARN
    unreadable = verdicts(FakeHealthNvml(), kernel_log=Missing("the kernel log /dev/kmsg is not readable"))["xid"]
    assert unreadable.status == Status.SKIP


def test_asking_for_a_gpu_the_drivers_do_not_list_fails_and_none_at_all_skips() -> None:
    reader = NvidiaHealthReader(FakeHealthNvml(), kernel_log=list)
    events = list(check([reader], [], LABELS, "cuda:3", no_load))
    assert [(v.check, v.status) for v in events if isinstance(v, Verdict)] == [("gpu", Status.FAIL)]
    events = list(check([], ["NVML not usable (no library)"], {}, "cpu", no_load))
    assert [(v.check, v.status) for v in events] == [("gpu", Status.SKIP)]
    assert "NVML not usable (no library)" in events[0].explanation


def test_the_facts_say_why_each_missing_counter_is_missing() -> None:
    reader = NvidiaHealthReader(FakeHealthNvml(), kernel_log=list)
    facts = next(e for e in check([reader], [], LABELS, "all", no_load) if isinstance(e, Facts))
    gpu = facts.data["gpus"][0]
    assert gpu["label"] == "cuda:0"
    assert gpu["bus_id"] == "0000:18:00.0"
    assert "not supported" in gpu["retired_pages"]["missing"]
    assert gpu["ecc"]["aggregate_corrected"] == 3


def amd_verdicts(tmp_path: Path, ras: dict[str, str] | None, **files: str) -> dict[str, Verdict]:
    reader = AmdHealthReader(amd_health_tree(tmp_path, ras, **files))
    return {v.check: v for v in check([reader], [], LABELS, "all", no_load) if isinstance(v, Verdict)}


CLEAN_RAS = {"umc_err_count": "ue: 0\nce: 2\n", "gfx_err_count": "ue: 0\nce: 0\n", "gpu_vram_bad_pages": ""}


def test_a_clean_amd_card_passes_and_says_what_amdgpu_does_not_offer(tmp_path: Path) -> None:
    found = amd_verdicts(tmp_path, CLEAN_RAS)
    passed = {k for k, v in found.items() if v.status == Status.PASS}
    assert passed == {"ecc", "retired-pages", "pcie", "power-limit", "partition"}
    skipped = {k: v.explanation for k, v in found.items() if v.status == Status.SKIP}
    assert set(skipped) == {"row-remap", "xid", "persistence", "idle-clocks", "fabric"}
    assert "gpu_metrics" in skipped["idle-clocks"]


@pytest.mark.parametrize(
    ("ras", "files", "check_name", "status", "words"),
    [
        (CLEAN_RAS | {"umc_err_count": "ue: 4\nce: 9\n"}, {}, "ecc", Status.FAIL, "4 uncorrectable"),
        (CLEAN_RAS | {"gpu_vram_bad_pages": "0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n"}, {},
         "retired-pages", Status.WARN, "pending"),
        (CLEAN_RAS | {"gpu_vram_bad_pages": "0x00000003 : 0x00001000 : F\n"}, {}, "retired-pages", Status.FAIL,
         "could not retire 1"),
        (CLEAN_RAS, {"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "8"}, "pcie", Status.WARN,
         "Gen4 x8 at idle"),
        (CLEAN_RAS, {"hwmon__hwmon2__power1_cap": "500000000"}, "power-limit", Status.WARN, "500 W, below"),
        (CLEAN_RAS, {"current_compute_partition": "CPX"}, "partition", Status.WARN, "compute partitions (CPX)"),
        (None, {}, "ecc", Status.SKIP, "no RAS"),
        (CLEAN_RAS, {"current_link_speed": "Unknown"}, "pcie", Status.SKIP, "does not report"),
        (CLEAN_RAS, {"hwmon__hwmon2__power1_cap_default": ""}, "power-limit", Status.SKIP, "does not report the"),
    ],
)  # fmt: skip
def test_each_amd_fault_gets_its_verdict(
    tmp_path: Path, ras: dict | None, files: dict, check_name: str, status: Status, words: str
) -> None:
    verdict = amd_verdicts(tmp_path, ras, **files)[check_name]
    assert verdict.status == status, verdict.explanation
    assert words in verdict.explanation


def test_small_parsers() -> None:
    assert link_gen("16.0 GT/s PCIe") == 4 and link_gen("2.5 GT/s PCIe") == 1 and link_gen("Unknown") is None
    assert bad_pages("0x1 : 0x1000 : R\n0x2 : 0x1000 : R\n0x3 : 0x1000 : P\n") == {
        "retired": 2,
        "pending": 1,
        "failed": 0,
    }
    assert normalise_bus_id("00000000:18:00.0") == "0000:18:00.0" == normalise_bus_id("0000:18:00.0")
    assert normalise_bus_id("garbage") is None
    assert share_in_words(0.5) == "half" and share_in_words(0.25) == "a quarter" and share_in_words(0.6) == "60%"


def test_without_nvml_or_amdgpu_the_readers_say_why(tmp_path: Path) -> None:
    readers, absent, broken = open_readers(tmp_path)
    if readers or broken:
        pytest.skip("this host has a GPU driver")
    assert any("NVML" in why for why in absent) and any("amdgpu" in why for why in absent)


def test_the_ctypes_binding_reads_a_real_shared_library(tmp_path: Path) -> None:
    """Compiled from tests/fake_nvml_lib.c: real ctypes calls, out-parameters, error codes and a call it lacks."""
    nvml = open_nvml(str(build_fake_nvml(tmp_path)))
    assert isinstance(nvml, Nvml)
    reader = NvidiaHealthReader(nvml, kernel_log=list)
    first, second = reader.devices()
    assert (first.name, first.bus_id, second.bus_id) == ("NVIDIA H200", "0000:18:00.0", "0000:3b:00.0")
    assert second.ecc == {"volatile_corrected": 0, "volatile_uncorrected": 12, "aggregate_corrected": 1,
                          "aggregate_uncorrected": 0}  # fmt: skip
    assert first.ecc == {"volatile_corrected": 0, "volatile_uncorrected": 0, "aggregate_corrected": 1,
                         "aggregate_uncorrected": 0}  # fmt: skip
    assert second.pcie == {"gen": 4, "max_gen": 5, "width": 8, "max_width": 16, "gpu_max_gen": 5}
    assert second.power == {"limit_w": 500.0, "default_w": 700.0, "min_w": 200.0, "max_w": 700.0, "enforced_w": 700.0}
    assert second.idle_clocks["reasons"] == ["idle", "software thermal slowdown"]  # through the older call's name
    assert second.row_remap == {"correctable": 1, "uncorrectable": 2, "pending": 1, "failure": 0}
    assert isinstance(first.retired_pages, Missing) and "not supported" in first.retired_pages.why
    assert first.fabric == {"state": "completed", "status": 0}
    found = [v for v in check([reader], [], {"0000:3b:00.0": "cuda:1"}, "cuda:1", no_load) if isinstance(v, Verdict)]
    assert {v.check: v.status for v in found}["power-limit"] == Status.WARN
    assert {v.device for v in found} == {"cuda:1"}
    reader.close()


def test_the_health_stage_through_the_cli_on_a_host_without_a_gpu(tmp_path: Path) -> None:
    if open_readers()[0] or open_readers()[2]:
        pytest.skip("this host has a GPU driver")
    out = tmp_path / "out.json"
    env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"))
    command = [sys.executable, "-m", "rigcheck.tui.cli", "run", "health", "--no-telemetry", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [verdict] = json.loads(out.read_text())["verdicts"]
    assert (verdict["check_name"], verdict["status"]) == ("gpu", "SKIP")
    assert "NVML not usable" in verdict["explanation"]
    asked = subprocess.run([*command, "--device", "cuda:0"], capture_output=True, text=True, env=env, timeout=120)
    assert asked.returncode == 2  # a GPU was asked for and there is none: refused before the run


def test_gpus_are_named_as_torch_names_them_by_pci_address_or_else_by_nvml_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Props:
        def __init__(self, bus: int | None) -> None:
            if bus is not None:
                self.pci_bus_id, self.pci_domain_id, self.pci_device_id = bus, 0, 0

    def fake_torch(buses: list[int | None]):  # type: ignore[no-untyped-def]
        cuda = SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: len(buses),
            get_device_properties=lambda index: Props(buses[index]),
        )
        return SimpleNamespace(cuda=cuda, version=SimpleNamespace(hip=None))

    # torch counts fastest first: its cuda:0 is NVML's second GPU
    labels = torch_labels(fake_torch([0x3B, 0x18]))
    assert labels == {"0000:3b:00.0": "cuda:0", "0000:18:00.0": "cuda:1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert torch_labels(fake_torch([None, None])) == {"nvml:1": "cuda:0", "nvml:0": "cuda:1"}
    reader = NvidiaHealthReader(FakeHealthNvml(), kernel_log=list)
    [gpu] = reader.devices()
    assert label_for(gpu, {"nvml:0": "cuda:1"}) == "cuda:1" and label_for(gpu, {}) == "nvml:0"


def test_a_gpu_the_driver_lists_but_cannot_reach_fails_and_a_failing_driver_fails() -> None:
    class LostGpu(FakeHealthNvml):
        def count(self) -> int:
            return 2

        def handle(self, index: int) -> str | NvmlFailure:
            return NvmlFailure(15, "GPU is lost") if index == 1 else "handle0"

    reader = NvidiaHealthReader(LostGpu(), kernel_log=list)
    found = [v for v in check([reader], [], LABELS, "all", no_load) if isinstance(v, Verdict)]
    lost = [v for v in found if v.device == "nvml:1"]
    assert [(v.check, v.status) for v in lost] == [("reachable", Status.FAIL)]
    assert "cannot be reached: GPU is lost" in lost[0].explanation
    assert {v.status for v in found if v.device == "cuda:0" and v.check == "ecc"} == {Status.PASS}
    broken = ["the NVIDIA driver's NVML is installed but fails to start: RM has detected an NVML/RM version mismatch"]
    found = [v for v in check([], [], {}, "cpu", no_load, tuple(broken)) if isinstance(v, Verdict)]
    assert [(v.check, v.status) for v in found] == [("driver", Status.FAIL), ("gpu", Status.SKIP)]
