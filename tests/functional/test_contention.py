"""A figure taken while other processes burn the CPUs is SUSPECT, with the reason; on a quiet host TRUSTED."""

from __future__ import annotations

import itertools
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from quiet_cpu import quiet_cpu
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import RunPlan
from rigcheck.engine.run.session import RunSession, start_sampler
from rigcheck.engine.store import Store
from rigcheck.engine.trust.conditions import DEFAULT_POLICY, cpu_contention
from stage_infos import fake

BURN = "import os; open(os.environ['PIDFILE'], 'a').write(f'{os.getpid()}\\n')\nwhile True: pass"


def start_burners(count: int, pidfile: Path) -> list[int]:
    """CPU burners that are not rigcheck's descendants (their launcher exits at once): other users' jobs."""
    launcher = " ; ".join(f'({sys.executable} -c "{BURN}" &)' for _ in range(count))
    subprocess.run(["sh", "-c", launcher], env=dict(os.environ, PIDFILE=str(pidfile)), check=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pids = [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []
        if len(pids) == count:
            return pids
        time.sleep(0.05)
    raise AssertionError("burners did not start")


def measure(tmp_path: Path, name: str) -> tuple[dict, list[dict]]:
    """The figure as stored (conditions and params) and the run's verdicts."""
    store = Store(tmp_path / f"{name}.db")
    info = replace(fake("timed"), throughput=True)
    run_id = store.begin_run([info.name], "cpu", "quick", sys.executable, [])
    sampler = start_sampler(0.1)
    try:
        time.sleep(1.0)  # let the quiet check see a full second
        session = RunSession(store, RunPlan(run_id, RunRequest((info,)), tmp_path / name), sampler=sampler)
        session.start()
        assert session.wait(60)
    finally:
        sampler.stop()
    report = store.report(run_id)
    return report["measurements"][0], report["verdicts"]


def test_quiet_host_gives_trusted(tmp_path: Path) -> None:
    """The end-to-end clean case for a real figure, on a busy machine too: the run is pinned to one CPU that
    every other task is moved off (tests/quiet_cpu.py), so rigcheck judges its figure on a CPU set that is
    quiet, and the figure must be TRUSTED, with no warning before the stage. It never skips."""
    with quiet_cpu(tmp_path / "quiet-cpu") as quiet:
        figure, verdicts = measure(tmp_path, "quiet")
        conditions = figure["conditions"]
        stuck = quiet.others_on_it() if conditions["trust"] != "TRUSTED" else []
    busy = cpu_contention(conditions, int(figure["params"].get("threads") or 1))
    said = f"{conditions}; tasks left on CPU {quiet.cpu} that could not be moved off it: {stuck or 'none busy'}"
    # judged on the one CPU kept for the run, not on the host, whose other CPUs may be as busy as they like
    assert conditions.get("cpu_set_size") == 1, said
    assert conditions["cpu_set_others_cpus"] < DEFAULT_POLICY.floor(1, 1), said
    assert not busy and conditions["trust"] == "TRUSTED", said
    before = [v for v in verdicts if v["check_name"] == "quiet-check"]
    assert all(v["status"] == "PASS" for v in before), before


def test_cpu_burners_make_the_figure_suspect_with_the_reason(tmp_path: Path) -> None:
    cpus = psutil.cpu_count() or 2
    pids = start_burners(cpus, tmp_path / "pids")
    try:
        figure, verdicts = measure(tmp_path, "busy")
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    conditions = figure["conditions"]
    assert conditions["trust"] == "SUSPECT", conditions
    assert any(r.startswith("other processes kept") for r in conditions["trust_reasons"])
    assert conditions["host_others_cpus"] > 0.5 * cpus
    quiet_check = [v for v in verdicts if v["check_name"] == "quiet-check"]
    assert quiet_check and quiet_check[0]["status"] == "WARN"


@pytest.mark.parametrize("bad", [["--interval", "0"], ["--count", "0"]])
def test_monitor_bad_arguments(bad: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "rigcheck.tui.cli", "monitor", *bad], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_monitor_prints_twenty_json_samples_on_its_schedule() -> None:
    import json

    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "monitor", "--json", "--count", "20", "--interval", "0.1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 20
    assert all(set(line) == {"t", "host", "gpus"} for line in lines)
    # on the 0.1 s schedule: most gaps are one interval (a busy host may make one late, or skip a tick, but the
    # schedule does not drift; the sampler's schedule itself is judged on a fake clock in test_conditions)
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(lines)]
    assert statistics.median(gaps) == pytest.approx(0.1, abs=0.03), gaps
    assert min(gaps) > 0
