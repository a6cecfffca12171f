"""The gate's own checks on GPUs built here, each at the edges the fake NVML library cannot reach (it reports
0% utilization and always reads the link): the count against what was expected, VBIOS versions, XIDs and the
driver's recovery action, throttle reasons now, the link at idle and busy, other processes (gate/checks.py;
the cases a mutation sample found unpinned, issue 45)."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Status
from rigcheck.engine.facts.health_model import GpuHealth, Missing
from rigcheck.engine.gate import checks
from rigcheck.engine.gate.checks import gpu_count, pcie_now, processes, throttle_now, versions, xids
from rigcheck.engine.gate.kmsg import KernelLog, XidRecord
from rigcheck.engine.gate.read import GateGpu, NodeReading

BUS = "0000:18:00.0"


def gpu(n: int = 0, vendor: str = "NVIDIA", vbios: str | Missing = "96.00.99", **health: Any) -> GateGpu:
    processes: list[dict[str, Any]] | Missing = health.pop("processes", [])
    return GateGpu(
        f"nvml:{n}", GpuHealth(n, "NVIDIA H200", vendor, health.pop("bus", BUS), **health), f"GPU-{n}", vbios, processes
    )


def node(count: int, pci: int | None = None, **kwargs: Any) -> NodeReading:
    return NodeReading([gpu(i) for i in range(count)], pci_gpus=count if pci is None else pci, **kwargs)


def test_the_count_against_what_was_expected() -> None:
    more = gpu_count(node(9), 8, "--expect-gpus")
    assert (more.status, more.explanation) == (Status.WARN, "9 GPU(s) found, 8 expected (--expect-gpus)")
    assert more.numbers == {"found": 9, "expected": 8, "pci": 9, "short": "9 GPUs, 8 expected"}
    fewer = gpu_count(node(7), 8, "the last clean check")
    assert (fewer.status, fewer.numbers["short"]) == (Status.FAIL, "7 of 8 GPUs")
    assert fewer.explanation == "7 GPU(s) found, 8 expected (the last clean check): a GPU is missing"
    same = gpu_count(node(8), 8, "--expect-gpus")
    assert (same.status, same.explanation) == (Status.PASS, "8 GPU(s) found, as expected (--expect-gpus)")
    unexpected = gpu_count(node(2), None, "")
    assert unexpected.status == Status.SKIP and unexpected.numbers["short"] == "2 GPUs, none expected"
    assert "nothing to compare with" in unexpected.explanation


def test_a_gpu_on_the_bus_the_driver_lost_fails_even_when_the_count_is_as_expected() -> None:
    lost = gpu_count(node(7, pci=8), 7, "--expect-gpus")
    assert lost.status == Status.FAIL and lost.numbers["short"] == "7 of 8 GPUs on the bus"
    assert lost.explanation.startswith("the PCI bus lists 8 NVIDIA GPU(s) but the driver reaches 7: ")
    assert gpu_count(node(8, pci=8), 8, "--expect-gpus").status == Status.PASS  # as many on the bus: no fault


def test_a_driver_that_cannot_be_read_is_not_counted() -> None:
    found = gpu_count(node(0, unknown=["NVML: driver/library version mismatch"]), 8, "--expect-gpus")
    assert found.status == Status.SKIP and found.numbers["missing"].startswith("GPUs could not be counted: NVML")


def test_vbios_versions() -> None:
    mixed = versions(NodeReading([gpu(0), gpu(1, vbios="96.00.AA")], driver={"NVIDIA": "580.1"}))
    assert mixed.status == Status.WARN and mixed.numbers["short"] == "mixed VBIOS versions"
    one = versions(NodeReading([gpu(0), gpu(1, vbios=Missing("no permission"))], driver={"NVIDIA": "580.1"}))
    assert one.status == Status.PASS
    assert one.explanation == "NVIDIA driver 580.1; every GPU on NVIDIA VBIOS 96.00.99 (nvml:1 not read)"
    none = versions(NodeReading([gpu(0, vbios=Missing("no permission"))]))
    assert none.status == Status.SKIP and none.explanation == "no driver version; VBIOS not read: no permission"


def log(*records: XidRecord, boot: str = "b1") -> KernelLog:
    return KernelLog(list(records), max((r.seq for r in records), default=0), boot, [])


def test_a_recovery_action_alone_is_critical() -> None:
    found = xids(gpu(), log(XidRecord(5, BUS, checks.RECOVERY_XID, "Reset GPU")), None)
    assert found.status == Status.FAIL and found.numbers["short"] == "nvml:0 Reset GPU"
    assert found.explanation == "nvml:0 logged XID 154 since boot; the driver asks: Reset GPU"
    assert checks.RECOVERY_XID == 154
    for none in ("None", "none"):  # the driver says no action is needed: no fault
        assert xids(gpu(), log(XidRecord(5, BUS, 154, none)), None).status == Status.WARN  # only new
    other_gpu = xids(gpu(), log(XidRecord(5, "0000:99:00.0", 154, "Reset GPU")), None)
    assert other_gpu.status == Status.PASS  # another GPU's recovery is not this one's


def test_a_fatal_xid_fails_with_its_name_and_whether_it_is_new() -> None:
    found = xids(gpu(), log(XidRecord(3, BUS, 79, None), XidRecord(9, BUS, 79, None)), {"boot_id": "b1", "last_seq": 5})
    assert found.status == Status.FAIL
    assert found.explanation == "nvml:0 logged XID 79 (GPU fell off the bus) x2 new since boot; reset the GPU or reboot"
    assert found.numbers["short"] == "nvml:0 XID 79" and found.numbers["new"] == {79: 1}


def test_other_xids_warn_only_when_new_since_the_cursor_of_this_boot() -> None:
    records = (XidRecord(3, BUS, 13, None), XidRecord(8, BUS, 43, None))
    new = xids(gpu(), log(*records), {"boot_id": "b1", "last_seq": 5})
    assert new.status == Status.WARN and new.numbers["short"] == "nvml:0 new XID 43"
    assert new.explanation.startswith("nvml:0 logged XID 43 x1 since the last check")
    seen = xids(gpu(), log(*records), {"boot_id": "b1", "last_seq": 8})
    assert seen.status == Status.PASS
    assert seen.explanation == "nvml:0 has no new XID in the kernel log (XID 13 x1, XID 43 x1 before the last check)"
    rebooted = xids(gpu(), log(*records, boot="b2"), {"boot_id": "b1", "last_seq": 8})  # a new boot: all are new
    assert rebooted.status == Status.WARN and rebooted.numbers["after_seq"] == 0
    clean = xids(gpu(), log(), None)
    assert (clean.status, clean.explanation) == (Status.PASS, "nvml:0 has no new XID in the kernel log")


def test_xids_unread_or_not_nvidias() -> None:
    assert xids(gpu(), Missing("dmesg denied"), None).numbers["missing"] == "dmesg denied"
    amd = xids(gpu(vendor="AMD"), log(), None)
    assert amd.status == Status.SKIP and "amdgpu reports memory faults through RAS" in amd.explanation


@pytest.mark.parametrize(
    ("reasons", "status"),
    [(["power brake"], Status.FAIL), (["hardware slowdown", "power cap"], Status.FAIL),
     (["software thermal slowdown"], Status.WARN), (["power cap", "idle", "sync boost"], Status.PASS),
     ([], Status.PASS)],
)  # fmt: skip
def test_throttle_reasons_now(reasons: list[str], status: Status) -> None:
    found = throttle_now(gpu(idle_clocks={"reasons": reasons, "utilization_pct": 55}))
    assert found.status == status
    if status == Status.WARN:
        assert (
            found.explanation
            == "nvml:0 is held down now by software thermal slowdown at 55% utilization: check its cooling"
        )
    if status == Status.PASS:
        assert found.explanation == f"nvml:0 has no fault holding its clocks (reasons: {', '.join(reasons) or 'none'})"


def link(gen: int, width: int, max_gen: int = 5, max_width: int = 16) -> dict[str, int]:
    return {"gen": gen, "width": width, "max_gen": max_gen, "max_width": max_width}


@pytest.mark.parametrize(
    ("pcie", "busy", "status"),
    [(link(5, 16), 99, Status.PASS),  # a busy GPU at full speed: never a WARN
     (link(5, 8), 0, Status.WARN),  # width below its maximum: a fault at any load
     (link(1, 16), checks.BUSY_PCT + 1, Status.WARN),  # a lower generation while busy
     (link(1, 16), checks.BUSY_PCT, Status.PASS),  # not busy yet: an idle link saves power so
     (link(1, 16), 0, Status.PASS)],
)  # fmt: skip
def test_the_link_at_idle_and_busy(pcie: dict[str, int], busy: int, status: Status) -> None:
    found = pcie_now(gpu(pcie=pcie, idle_clocks={"reasons": [], "utilization_pct": busy}))
    assert found.status == status, found.explanation
    assert checks.BUSY_PCT == 10


def test_the_links_words() -> None:
    assert pcie_now(gpu(pcie=link(5, 16))).explanation == "nvml:0 PCIe link at Gen5 x16, its maximum"
    narrow = pcie_now(gpu(pcie=link(5, 8)))
    assert narrow.numbers["short"] == "nvml:0 PCIe x8"
    assert narrow.explanation.startswith("nvml:0 PCIe link trained at x8 of x16 (Gen5 x8, maximum Gen5 x16): ")
    busy = pcie_now(gpu(pcie=link(3, 16), idle_clocks={"reasons": [], "utilization_pct": 80}))
    assert busy.explanation == "nvml:0 PCIe link at Gen3 x16 while busy, its maximum is Gen5 x16"
    assert busy.numbers["short"] == "nvml:0 PCIe Gen3"
    idle = pcie_now(gpu(pcie=link(3, 16), idle_clocks=Missing("not read")))
    assert idle.explanation == "nvml:0 PCIe link at Gen3 x16 while idle (it saves power so), full width of Gen5 x16"
    unread = pcie_now(gpu(pcie=Missing("NVML: not supported")))
    assert unread.status == Status.SKIP and unread.numbers["missing"] == "NVML: not supported"


def test_other_processes_warn_only_where_the_gpu_should_be_idle() -> None:
    busy = gpu(processes=[{"pid": 42, "used_bytes": 3 * 2**30}, {"pid": 43}])
    warned = processes(busy, expect_idle=True)
    assert warned.status == Status.WARN and warned.numbers["short"] == "nvml:0 busy: pid 42"
    assert "runs pid 42 (3.0 GiB), pid 43: a previous job" in warned.explanation
    assert processes(busy, expect_idle=False).status == Status.PASS
    assert processes(gpu(), expect_idle=True).status == Status.PASS
    assert processes(gpu(processes=Missing("no permission")), True).status == Status.SKIP


def test_a_link_read_above_its_maximum_is_called_at_its_maximum() -> None:
    """NVML's maximum can be read lower than the link now (the host's side, or a stale read): no idle words."""
    found = pcie_now(gpu(pcie=link(5, 16, max_gen=4), idle_clocks={"reasons": [], "utilization_pct": 0}))
    assert (found.status, found.explanation) == (Status.PASS, "nvml:0 PCIe link at Gen5 x16, its maximum")


def test_a_link_read_wider_or_faster_than_its_maximum_is_never_a_warn_even_busy() -> None:
    for pcie in (link(5, 16, max_width=8), link(5, 16, max_gen=4)):
        found = pcie_now(gpu(pcie=pcie, idle_clocks={"reasons": [], "utilization_pct": 90}))
        assert (found.status, found.explanation) == (Status.PASS, "nvml:0 PCIe link at Gen5 x16, its maximum")


def test_the_drivers_latest_recovery_action_is_the_one_that_counts() -> None:
    settled = log(XidRecord(3, BUS, 154, "Reset GPU"), XidRecord(7, BUS, 154, "None"))  # then: nothing needed
    assert xids(gpu(), settled, None).status == Status.WARN  # new XIDs, no action asked: not CRITICAL
    worse = log(XidRecord(3, BUS, 154, "None"), XidRecord(7, BUS, 154, "Reboot the node"))
    found = xids(gpu(), worse, None)
    assert found.status == Status.FAIL and found.numbers["recovery"] == "Reboot the node"


def test_another_gpus_xids_are_not_this_ones_whichever_its_bus() -> None:
    for other in ("0000:01:00.0", "0000:99:00.0"):
        found = xids(gpu(), log(XidRecord(5, other, 79, None), XidRecord(6, other, 154, "Reset GPU")), None)
        assert found.status == Status.PASS and found.numbers["codes"] == {}


def test_a_long_recovery_action_is_cut_to_40_characters_in_the_short_words() -> None:
    action = "Drain and reset the GPU, then run the field diagnostics"
    found = xids(gpu(), log(XidRecord(5, BUS, 154, action)), None)
    assert found.numbers["short"] == f"nvml:0 {action}"[:40] and len(found.numbers["short"]) == 40
