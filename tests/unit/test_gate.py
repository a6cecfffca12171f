"""The passive gate against the stand-in NVML (tests/fake_nvml_gate.c): each fault fires beside a clean case, on
each side of its threshold, and each exit style maps the state it gives."""

from __future__ import annotations

from typing import Any

import pytest
from gate_fakes import Node, gate_library_fixture, node_fixture  # noqa: F401 - fixtures
from rigcheck.engine.events import Status
from rigcheck.engine.gate.outcome import CRITICAL, LINE_MAX, OK, UNKNOWN, WARN, exit_code
from rigcheck.engine.gate.passive import GateResult
from rigcheck.engine.hw import nvml as hw_nvml

STYLES = ("rigcheck", "nagios", "npd")
CODES = {OK: (0, 0, 0), WARN: (0, 1, 0), CRITICAL: (1, 2, 1), UNKNOWN: (7, 3, 2)}


def fired(result: GateResult, check: str, device: str = "nvml:1") -> Any:
    found = [v for v in result.verdicts if v.check == check and v.device == device]
    assert len(found) == 1, [(v.check, v.device) for v in result.verdicts]
    return found[0]


def assert_state(result: GateResult, state: str) -> None:
    assert result.state == state, result.line
    assert len(result.line) <= LINE_MAX and "\n" not in result.line
    assert result.line.startswith(f"{state}:")
    assert tuple(result.code(style) for style in STYLES) == CODES[state]


def test_a_clean_node_is_ok_in_every_style(node: Node) -> None:
    result = node.check(expect=2)
    assert_state(result, OK)
    assert result.line == "OK: 2 GPU(s) healthy"
    assert fired(result, "gpu-count", "node").status == Status.PASS
    assert result.run_id is not None and node.store.run(result.run_id)["profile"] == "passive"


FAULTS = [
    # (faults, check, status, state)
    ({"remap_pending1": 1}, "row-remap", Status.WARN, WARN),
    ({"remap_failure1": 1}, "row-remap", Status.FAIL, CRITICAL),
    ({"ecc_uncorrected1": 1}, "ecc", Status.FAIL, CRITICAL),
    ({"width1": 8}, "pcie", Status.WARN, WARN),
    ({"power_limit1": 500000}, "power-limit", Status.WARN, WARN),
    ({"power_limit1": 693001}, "power-limit", Status.PASS, OK),  # within 1% of the default: not lowered
    ({"power_limit1": 692999}, "power-limit", Status.WARN, WARN),
    ({"persistence1": 0}, "persistence", Status.WARN, WARN),
    ({"throttle1": 0x8}, "throttle", Status.FAIL, CRITICAL),  # hardware slowdown
    ({"throttle1": 0x4}, "throttle", Status.PASS, OK),  # a power cap is a busy GPU's normal state
    ({"throttle1": 0x20}, "throttle", Status.WARN, WARN),  # software thermal slowdown
    ({"gen1": 3}, "pcie", Status.PASS, OK),  # a lower generation at idle saves power
    ({"vbios1": 70}, "versions", Status.WARN, WARN),
]


@pytest.mark.parametrize(("faults", "check", "status", "state"), FAULTS)
def test_each_fault_fires_with_its_status_and_state(
    node: Node, faults: dict, check: str, status: Status, state: str
) -> None:
    node.faults(**faults)
    result = node.check(expect=2)
    device = "node" if check == "versions" else "nvml:1"
    assert fired(result, check, device).status == status
    assert fired(result, check, "node" if check == "versions" else "nvml:0").status in (Status.PASS, status)
    assert_state(result, state)


def test_a_missing_gpu_is_critical_against_expect_and_against_the_last_clean_check(node: Node) -> None:
    node.faults(gpus=1)
    assert_state(node.check(expect=2), CRITICAL)
    node.faults(gpus=2)
    assert_state(node.check(), OK)  # the clean check the next one compares with
    node.faults(gpus=1)
    result = node.check()
    assert_state(result, CRITICAL)
    assert "1 of 2 GPUs" in result.line and "last clean check" in fired(result, "gpu-count", "node").explanation


def test_a_gpu_on_the_pci_bus_that_the_driver_lost_is_critical_on_the_first_check(node: Node) -> None:
    for address in ("0000:18:00.0", "0000:19:00.0", "0000:1a:00.0"):
        device = node.folder / "pci" / address
        device.mkdir()
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text("0x030200\n")
    result = node.check()
    assert_state(result, CRITICAL)
    assert "2 of 3 GPUs on the bus" in result.line


def test_a_fatal_xid_is_critical_with_the_drivers_recovery_action(node: Node) -> None:
    node.xid(10, 1, 79, "pid='<unknown>', GPU has fallen off the bus.")
    node.xid(11, 1, 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
    result = node.check(expect=2)
    assert_state(result, CRITICAL)
    xid = fired(result, "xid")
    assert "XID 79 (GPU fell off the bus)" in xid.explanation and "Node Reboot Required" in xid.explanation
    assert fired(result, "xid", "nvml:0").status == Status.PASS
    assert_state(node.check(expect=2), CRITICAL)  # still there next time: a reboot clears it, not a check


def test_an_application_xid_warns_once_then_the_cursor_moves_past_it(node: Node) -> None:
    node.xid(10, 0, 13, "Graphics SM Warp Exception")
    first = node.check(expect=2)
    assert_state(first, WARN)
    assert fired(first, "xid", "nvml:0").status == Status.WARN
    second = node.check(expect=2)
    assert fired(second, "xid", "nvml:0").status == Status.PASS
    assert "before the last check" in fired(second, "xid", "nvml:0").explanation
    assert_state(second, OK)


def test_the_kernel_log_unread_is_unknown_never_ok(node: Node) -> None:
    node.log.unlink()
    result = node.check(expect=2)
    assert_state(result, UNKNOWN)
    assert "xid not checked" in result.line


def test_nvml_failing_to_start_is_unknown(node: Node) -> None:
    node.faults(init_fail=1)
    result = node.check(expect=2)
    assert_state(result, UNKNOWN)
    assert "NVML fails to start" in result.line


def test_no_nvml_library_with_nvidia_gpus_on_the_bus_is_unknown(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(node.folder / "absent.so"))
    device = node.folder / "pci" / "0000:18:00.0"
    device.mkdir()
    (device / "vendor").write_text("0x10de\n")
    (device / "class").write_text("0x030200\n")
    assert_state(node.check(), UNKNOWN)


def test_processes_warn_only_where_the_gpu_should_be_idle(node: Node) -> None:
    import os

    node.faults(processes1=1, pid=os.getppid())  # a process this PID namespace can see
    assert_state(node.check(expect=2), OK)
    result = node.check(expect=2, idle=True)
    assert_state(result, WARN)
    assert f"pid {os.getppid()}" in fired(result, "processes").explanation


@pytest.mark.parametrize(("rise", "status"), [(9, Status.PASS), (10, Status.WARN)])
def test_correctable_ecc_growth_warns_naming_the_run_it_began(node: Node, rise: int, status: Status) -> None:
    first = node.check(expect=2)
    node.faults(ecc_corrected1=12 + rise)
    second = node.check(expect=2)
    found = fired(second, "ecc-history")
    assert found.status == status
    assert fired(second, "ecc-history", "nvml:0").status == Status.PASS
    if status == Status.WARN:
        assert f"rose from 12 to {12 + rise} since this run" in found.explanation
        assert f"after run {first.run_id}" in found.explanation
        third = node.check(expect=2)
        assert f"since run {second.run_id}" in fired(third, "ecc-history").explanation


def test_a_counter_that_went_down_is_a_driver_reload_not_a_fault(node: Node) -> None:
    node.faults(ecc_corrected1=500)
    node.check(expect=2)
    node.faults(ecc_corrected1=3)
    result = node.check(expect=2)
    assert [v for v in result.verdicts if v.check == "ecc-history" and v.device == "nvml:1"] == []


def test_a_new_remapped_row_warns(node: Node) -> None:
    node.check(expect=2)
    node.faults(remap_correctable1=1)
    assert fired(node.check(expect=2), "remap-history").status == Status.WARN


def test_a_link_that_trained_lower_than_before_warns_naming_the_run(node: Node) -> None:
    clean = node.check(expect=2)
    node.faults(width1=8)
    lower = node.check(expect=2)
    found = fired(lower, "pcie-history")
    assert found.status == Status.WARN and f"x16 in run {clean.run_id}" in found.explanation
    assert "since this run" in found.explanation
    again = node.check(expect=2)
    assert f"since run {lower.run_id}" in fired(again, "pcie-history").explanation


def test_a_first_xid_on_a_gpu_is_named_by_its_history(node: Node) -> None:
    node.check(expect=2)
    node.xid(10, 1, 31, "MMU Fault")
    assert fired(node.check(expect=2), "xid-history").status == Status.WARN


def test_the_summary_stays_one_line_of_80_characters_with_every_fault_on_8_gpus(node: Node) -> None:
    node.faults(gpus=8, remap_failure=1, ecc_uncorrected=3, throttle=0x88, width=4, persistence=0)
    result = node.check(expect=8)
    assert_state(result, CRITICAL)
    assert "more)" in result.line


def test_without_a_store_the_check_still_answers(node: Node) -> None:
    result = node.check(expect=2, store=False)
    assert_state(result, OK)
    assert result.run_id is None


def test_exit_codes_per_style() -> None:
    assert [exit_code(state, "nagios") for state in (OK, WARN, CRITICAL, UNKNOWN)] == [0, 1, 2, 3]
    assert [exit_code(state, "npd") for state in (OK, WARN, CRITICAL, UNKNOWN)] == [0, 0, 1, 2]


def test_no_gpu_at_all_is_unknown_not_ok(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    node.faults(gpus=0)
    result = node.check()
    assert_state(result, UNKNOWN)
    assert "no GPU found" in result.line
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(node.folder / "absent.so"))
    assert_state(node.check(), UNKNOWN)


@pytest.mark.parametrize(("ue", "state"), [(0, OK), (1, CRITICAL)])
def test_an_amd_node_is_read_through_amdgpus_sysfs(
    node: Node, monkeypatch: pytest.MonkeyPatch, ue: int, state: str
) -> None:
    from fake_health import amd_health_tree
    from rigcheck.engine.gate.passive import passive_check
    from rigcheck.engine.gate.read import read_node

    monkeypatch.setattr(hw_nvml, "LIBRARY", str(node.folder / "absent.so"))
    drm = amd_health_tree(node.folder / "amd", ras={"umc_err_count": f"ue: {ue}\nce: 3\n"}, unique_id="a1b2c3")
    result = passive_check(node.store, 1, reading=read_node(node.log, drm_root=drm, pci_root=node.folder / "pci"))
    assert_state(result, state)
    assert fired(result, "ecc", "amdgpu:0").status == (Status.FAIL if ue else Status.PASS)
    assert fired(result, "xid", "amdgpu:0").status == Status.SKIP  # not NVIDIA's: no XIDs, and not a gap
    assert result.facts["gpus"][0]["uuid"] == "a1b2c3"


def test_a_full_runs_health_stage_is_compared_with_the_gpus_history(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passive check's history and a full run's health stage are one history, matched by UUID."""
    import sys

    from rigcheck.engine.run.request import RunRequest
    from rigcheck.engine.run.runner import RunPlan
    from rigcheck.engine.run.session import RunSession
    from stage_infos import fake

    first = node.check(expect=2)  # nvml:1 is GPU-...1 with 12 correctable errors
    for corrected, status in ((21, Status.PASS), (22, Status.WARN)):
        monkeypatch.setenv("FAKE_HEALTH_ECC", str(corrected))
        run_id = node.store.begin_run(["health"], "all", "quick", sys.executable, [])
        plan = RunPlan(run_id, RunRequest((fake("health", "health_facts"),)), node.folder / str(run_id))
        session = RunSession(node.store, plan)
        session.start()
        assert session.wait(120)
        found = [v for v in node.store.report(run_id)["verdicts"] if v["check_name"] == "ecc-history"]
        assert [(v["device"], v["status"]) for v in found] == [("cuda:1", status.value)]
    assert f"rose from 12 to 22 since run {run_id - 1}" in found[0]["explanation"]
    assert f"after run {first.run_id}" in found[0]["explanation"]


def test_a_store_that_cannot_be_written_costs_the_history_not_the_answer(node: Node) -> None:
    from rigcheck.engine.gate.passive import passive_check
    from rigcheck.engine.gate.read import read_node
    from rigcheck.engine.store import StoreError

    class Broken:
        def _read(self, *args: object) -> list:
            raise StoreError("store x is damaged")

        def begin_run(self, *args: object) -> int:
            raise StoreError("store x is read-only")

    node.faults(remap_pending1=1)
    reading = read_node(node.log, drm_root=node.folder / "drm", pci_root=node.folder / "pci")
    result = passive_check(Broken(), 2, reading=reading)
    assert_state(result, WARN)
    assert result.run_id is None and result.store_error == "not stored: store x is read-only"


def test_a_node_asked_to_have_no_gpu_and_that_has_none_is_ok(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--expect-gpus 0` on a CPU node of a mixed cluster: before, UNKNOWN on every check, so Slurm drained it."""
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(node.folder / "absent.so"))
    result = node.check(expect=0)
    assert_state(result, OK)
    assert fired(result, "gpu-count", "node").status == Status.PASS
    assert result.line == "OK: no GPU, as expected (--expect-gpus 0)"
    assert_state(node.check(expect=1), UNKNOWN)  # one expected, none readable: still not an OK
    assert_state(node.check(), UNKNOWN)  # nothing asked: a gate that saw no GPU says UNKNOWN, as before
    node.faults(gpus=0)  # a driver that lists no GPU, but one on the PCI bus: a GPU fell off, not a CPU node
    (node.folder / "pci" / "0000:01:00.0").mkdir()
    for name, text in (("vendor", "0x10de"), ("class", "0x030200")):
        (node.folder / "pci" / "0000:01:00.0" / name).write_text(text + "\n")
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(node.folder / "absent.so"))
    assert node.check(expect=0).state != OK
