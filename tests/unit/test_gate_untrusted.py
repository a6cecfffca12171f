"""The gate reads attacker-controlled text (issue 44): only a line the NVIDIA driver wrote is an XID, and nothing
chosen by whoever wrote to the kernel log (quotes, brackets, escape bytes) reaches the summary, the drain reason
or node-problem-detector's message; the Slurm half acts for one plainly named node only."""

from __future__ import annotations

import pytest
from gate_fakes import BUS, Node, gate_library_fixture, node_fixture  # noqa: F401 - fixtures
from rigcheck.engine.events import Status
from rigcheck.engine.gate.kmsg import read_kernel_log
from rigcheck.engine.gate.outcome import CRITICAL, OK
from rigcheck.engine.gate.slurm import BadNode, act, drain_reason, node_name, read_node

XID79 = f"NVRM: Xid (PCI:{BUS[1]}): 79, pid='<unknown>', GPU has fallen off the bus."
SEGFAULT = f"a.out[4242]: segfault at 0 ip 00007f00 sp 00007ffd error 4 in {XID79}[7f00+1000]"


def xid_codes(node: Node, text: str) -> list[int]:
    node.log.write_text(text)
    log = read_kernel_log(node.log)
    assert not isinstance(log, str) and hasattr(log, "records")
    return [r.code for r in log.records]


@pytest.mark.parametrize(
    ("line", "codes"),
    [
        (f"4,10,1000,-;{XID79}\n", [79]),  # /dev/kmsg, the kernel's facility
        (f"[ 1234.567890] {XID79}\n", [79]),  # a saved `dmesg`
        (f"[Mon Dec  7 02:00:00 2026] {XID79}\n", [79]),  # `dmesg -T`
        (f"{XID79}\n", [79]),  # a bare message
        (f"6,11,1000,-;{SEGFAULT}\n", []),  # a program's file name in a segfault line (issue 44's drain)
        (f"[ 1234.567890] {SEGFAULT}\n", []),
        (f"12,12,1000,-;{XID79}\n", []),  # written to /dev/kmsg by a user program (facility 1)
        (f"[ 1.0] foo {XID79}\n", []),
    ],
)
def test_only_a_line_the_driver_wrote_is_an_xid(node: Node, line: str, codes: list[int]) -> None:
    assert xid_codes(node, line) == codes


def test_a_segfault_named_like_an_xid_drains_nothing(node: Node) -> None:
    node.log.write_text(f"6,11,1000,-;{SEGFAULT}\n")
    assert node.check(expect=2).state == OK
    node.log.write_text(f"4,12,1000,-;{XID79}\n")
    assert node.check(expect=2).state == CRITICAL


def test_the_recovery_action_is_nvidias_word_for_its_code_never_the_lines(node: Node) -> None:
    words = 'GPU recovery action changed from 0x0 (None) to 0x2 (Node "Reboot" [now]\x1b]0;owned\x07 Required)'
    node.xid(10, 1, 154, words)
    result = node.check(expect=2)
    xid = next(v for v in result.verdicts if v.check == "xid" and v.device == "nvml:1")
    assert xid.status == Status.FAIL and "the driver asks: Node Reboot Required" in xid.explanation
    for text in (xid.explanation, result.line, drain_reason(result.line)):
        assert not set('"[]\x1b\x07') & set(text), text
    node.xid(11, 0, 154, "GPU recovery action changed from 0x0 (None) to 0x77 (Whatever she likes)")
    found = next(v for v in node.check(expect=2).verdicts if v.check == "xid" and v.device == "nvml:0")
    assert "recovery action 0x77" in found.explanation and "she likes" not in found.explanation


def test_escape_bytes_in_a_saved_log_reach_no_line(node: Node) -> None:
    node.log.write_bytes(f"4,10,1000,-;{XID79}\x1b[2J\xff\n".encode("latin-1"))
    result = node.check(expect=2)
    assert result.state == CRITICAL and result.line.isprintable()
    assert drain_reason(result.line).isprintable()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("CRITICAL: nvml:1 row remap failed", "rigcheck: row remap failed gpu1"),
        ("CRITICAL: nvml:0 uncorrectable ECC; nvml:1 XID 79", "rigcheck: uncorrectable ECC gpu0; XID 79 gpu1"),
        ("CRITICAL: 1 of 2 GPUs", "rigcheck: 1 of 2 GPUs"),
        ("UNKNOWN: NVML fails to start: version mismatch", "rigcheck: NVML fails to start: version mismatch"),
        ('CRITICAL: amdgpu:0 uncorrectable ECC "x" [y]', "rigcheck: uncorrectable ECC ?x? ?y? amdgpu0"),
    ],
)  # fmt: skip
def test_the_drain_reason_puts_the_cause_right_after_the_tag(line: str, reason: str) -> None:
    assert drain_reason(line) == reason


@pytest.mark.parametrize("name", ["", "vm,ghost", "gpu[1-4]", "a b", "-vm", "x" * 65, "vm\x1b"])
def test_one_plain_node_name_only(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BadNode):
        node_name(name)
    monkeypatch.setenv("SLURMD_NODENAME", name)
    with pytest.raises(BadNode):
        node_name()


def test_a_plain_node_name_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert node_name("gpu-7.rack2_a") == "gpu-7.rack2_a"
    monkeypatch.setenv("SLURMD_NODENAME", "vm")
    assert node_name() == "vm"


def test_an_answer_about_another_node_or_several_is_not_acted_on() -> None:
    two = "NodeName=vm State=IDLE Reason=x\nNodeName=ghost State=IDLE+DRAIN Reason=PSU swap [root@2026-12-03T14:10:07]"
    asked: list[list[str]] = []

    def scontrol(args: list[str]) -> tuple[int, str]:
        asked.append(args)
        return 0, two if args[0] == "show" else ""

    said, ok = act("vm", OK, "OK: 2 GPU(s) healthy", scontrol)
    assert not ok and "not this one node's" in said and asked == [["show", "node", "vm", "--oneliner"]]
    assert isinstance(read_node("vm", lambda _args: (0, "NodeName=vm2 State=IDLE")), str)
    assert not isinstance(read_node("vm", lambda _args: (0, "NodeName=vm State=IDLE")), str)
