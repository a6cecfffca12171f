"""The Slurm half of the gate without a cluster: reading scontrol's answer, and which command each case asks for."""

from __future__ import annotations

from rigcheck.engine.gate.outcome import CRITICAL, OK, UNKNOWN, WARN
from rigcheck.engine.gate.slurm import act, parse_node

LINE = "NodeName=gpu7 Arch=x86_64 State={state} Partitions=debug CapWatts=n/a{reason}"


class Scontrol:
    """Answers `show node` with a state and a reason, and records every other command."""

    def __init__(self, state: str, reason: str = "", fails: bool = False) -> None:
        self.state, self.reason, self.fails = state, reason, fails
        self.asked: list[list[str]] = []

    def __call__(self, args: list[str]) -> tuple[int, str]:
        if args[0] == "show":
            reason = f" Reason={self.reason} [root@2026-12-03T14:10:07]" if self.reason else ""
            return 0, LINE.format(state=self.state, reason=reason)
        self.asked.append(args)
        return (1, "slurm_update error: Invalid node state") if self.fails else (0, "")


def test_parse_node_reads_a_reason_with_spaces_and_equals_signs() -> None:
    text = LINE.format(state="IDLE+DRAIN", reason=" Reason=rigcheck: CRITICAL: a=b; c [slurm@2026-12-03T14:10:07]")
    found = parse_node(text)
    assert found is not None and found.drained and found.ours
    assert found.reason == "rigcheck: CRITICAL: a=b; c"
    idle = parse_node(LINE.format(state="IDLE", reason=""))
    assert idle is not None and not idle.drained and idle.reason == ""
    assert parse_node("slurm_load_node error: Invalid node name specified") is None


def test_a_failing_check_drains_with_rigchecks_reason() -> None:
    for state in (CRITICAL, UNKNOWN):
        scontrol = Scontrol("IDLE")
        said, ok = act("gpu7", state, f"{state}: nvml:1 row remap failed", scontrol)
        assert ok and "drained" in said
        assert scontrol.asked == [["update", "NodeName=gpu7", "State=DRAIN", "Reason=rigcheck: row remap failed gpu1"]]


def test_a_warn_or_ok_check_neither_drains_nor_touches_a_node_in_service() -> None:
    for state in (OK, WARN):
        scontrol = Scontrol("MIXED")
        assert act("gpu7", state, f"{state}: x", scontrol)[1]
        assert scontrol.asked == []


def test_resume_only_rigchecks_own_drain() -> None:
    ours = Scontrol("IDLE+DRAIN", "rigcheck: CRITICAL: nvml:1 row remap failed")
    assert act("gpu7", OK, "OK: 2 GPU(s) healthy", ours)[1]
    assert ours.asked == [["update", "NodeName=gpu7", "State=RESUME"]]
    theirs = Scontrol("DRAINED", "NHC: check_hw_ib failed")
    said, ok = act("gpu7", OK, "OK: 2 GPU(s) healthy", theirs)
    assert ok and theirs.asked == [] and "someone else" in said
    failing = Scontrol("DRAINED", "NHC: check_hw_ib failed")
    said, ok = act("gpu7", CRITICAL, "CRITICAL: nvml:0 XID 79", failing)
    assert ok and failing.asked == [] and "left as it is" in said


def test_an_unchanged_drain_is_not_rewritten_and_a_changed_one_is() -> None:
    same = Scontrol("IDLE+DRAIN", "rigcheck: XID 79 gpu1")
    act("gpu7", CRITICAL, "CRITICAL: nvml:1 XID 79", same)
    assert same.asked == []
    changed = Scontrol("IDLE+DRAIN", "rigcheck: CRITICAL: nvml:1 XID 79")
    act("gpu7", CRITICAL, "CRITICAL: nvml:0 uncorrectable ECC", changed)
    assert changed.asked[0][2] == "State=DRAIN"


def test_scontrol_refusing_is_reported_not_hidden() -> None:
    said, ok = act("gpu7", CRITICAL, "CRITICAL: x", Scontrol("IDLE", fails=True))
    assert not ok and "failed (1)" in said
    dry = Scontrol("IDLE")
    said, ok = act("gpu7", CRITICAL, "CRITICAL: x", dry, dry_run=True)
    assert ok and dry.asked == [] and said.startswith("would run: scontrol update NodeName=gpu7 State=DRAIN")


def test_slurm_health_exits_0_where_the_node_may_take_work(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A job prolog that exits non-zero holds the job: a WARN (persistence off) must not."""
    import argparse

    from rigcheck.engine.gate import slurm
    from rigcheck.tui import cli_gate

    class Result:
        line, verdicts, store_error, run_id = "", [], None, None
        reading = argparse.Namespace(unknown=[])

        def __init__(self, state: str) -> None:
            self.state, self.line, self.facts = state, f"{state}: x", {}

        def code(self, style: str) -> int:
            from rigcheck.engine.gate.outcome import exit_code

            return exit_code(self.state, style)

    args = argparse.Namespace(
        timeout=20.0, exit_style="nagios", verbose=False, node="gpu7", dry_run=False, kernel_log=None, no_store=True
    )
    monkeypatch.setattr(slurm, "run_scontrol", Scontrol("IDLE"))
    for state, code in ((OK, 0), (WARN, 0), (CRITICAL, 2), (UNKNOWN, 3)):
        monkeypatch.setattr(cli_gate, "_run_check", lambda _args, s=state: Result(s))
        assert cli_gate.command_slurm_health(args) == code
