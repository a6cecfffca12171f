"""`rigcheck monitor` names the processes that keep the host busy (issue 34: `top_others: []` while others
used 2.0 CPUs): the first shown sample waits for the process scan, the text line names them, and a kernel
worker renaming itself is not a new process charged its whole life's CPU time."""

from __future__ import annotations

import json

import pytest
from fakes import StartingSampler
from rigcheck.engine.telemetry.others import BusiestOthers, ProcStat
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.tui.monitor import format_line, monitor

BURNER = (ProcessUse(4242, "burner", cpus=1.9),)


def host(others: float, top: tuple[ProcessUse, ...] = ()) -> HostSample:
    return HostSample(cpus=2, load1=2.0, busy_cpus=others + 0.1, own_cpus=0.1, top_others=top)


def test_the_first_shown_sample_waits_until_the_busy_processes_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    # priming; then busy but not yet named (the scan's first pass only primes); then named
    samples = [
        Sample(0.0, host(1.9)),
        Sample(1.0, host(1.9)),
        Sample(2.0, host(1.9, BURNER)),
        Sample(3.0, host(1.9, BURNER)),
    ]
    assert monitor(1.0, 2, True, sampler=StartingSampler(samples)) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["t"] for line in lines] == [2.0, 3.0]
    assert all(line["host"]["top_others"][0]["name"] == "burner" for line in lines)


def test_a_busy_host_never_named_is_shown_after_the_wait(capsys: pytest.CaptureFixture[str]) -> None:
    samples = [Sample(float(t), host(1.9)) for t in range(6)]  # a scan that never names anyone
    assert monitor(1.0, 2, True, sampler=StartingSampler(samples)) == 0
    assert [json.loads(line)["t"] for line in capsys.readouterr().out.splitlines()] == [3.0, 4.0]


def test_a_quiet_host_is_shown_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    samples = [Sample(float(t), host(0.4)) for t in range(4)]  # just under the line: nothing to name
    assert monitor(1.0, 2, True, sampler=StartingSampler(samples)) == 0
    assert [json.loads(line)["t"] for line in capsys.readouterr().out.splitlines()] == [1.0, 2.0]


def test_the_text_line_names_the_busiest_others() -> None:
    line = format_line(Sample(0.0, host(1.9, (*BURNER, ProcessUse(7, "make", cpus=0.04)))))
    assert "busiest others: burner (pid 4242) 1.9, make (pid 7) 0.0" in line
    assert "busiest others" not in format_line(Sample(0.0, host(0.0)))


def test_a_kernel_worker_renaming_itself_is_not_charged_its_whole_life() -> None:
    """Seen: `kworker/u8:3-writeback 0.93 CPUs` from 1.88 s of CPU over its life, as its name changed."""
    scans = iter(
        [
            {8436: ProcStat("kworker/u8:3-writeback", 1.88, 2), 9: ProcStat("burner", 10.0, 1)},
            {8436: ProcStat("kworker/u8:3-events", 1.88, 2), 9: ProcStat("burner", 13.8, 1)},
        ]
    )
    now = [0.0]
    others = BusiestOthers(lambda: next(scans), clock=lambda: now[0])
    others.scan()
    now[0] = 2.0
    ranked = others.rank(others.scan(), own=[])
    assert [(p.name, p.cpus) for p in ranked] == [("burner", 1.9)]
