"""`rigcheck monitor`: its own start-up is not shown as other processes' load, and Ctrl-C exits 130."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from cli_calls import as_in_a_terminal
from fakes import StartingSampler
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.tui.monitor import monitor


def host(others: float) -> HostSample:
    return HostSample(cpus=2, load1=0.5, busy_cpus=others + 0.1, own_cpus=0.1)


def test_the_start_up_sample_is_dropped(capsys) -> None:  # type: ignore[no-untyped-def]
    sampler = StartingSampler([Sample(float(t), host(others)) for t, others in enumerate([1.9, 0.2, 0.3, 0.2])])
    assert monitor(0.1, 2, True, sampler=sampler) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["t"] for line in lines] == [1.0, 2.0]
    assert all(line["host"]["busy_cpus"] < 0.5 for line in lines) and sampler.stopped


def test_a_clean_start_shows_every_sample_after_the_first(capsys) -> None:  # type: ignore[no-untyped-def]
    sampler = StartingSampler([Sample(float(t), host(0.2)) for t in range(4)])
    assert monitor(0.1, 3, False, sampler=sampler) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def start_monitor() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rigcheck.tui.cli", "monitor", "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )


def test_ctrl_c_exits_130_without_a_traceback() -> None:
    proc = start_monitor()
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # running and printing: the start-up sample was dropped, this is the next
        assert first.startswith("host load")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 130 and "Traceback" not in err
    finally:
        proc.kill()
        proc.communicate()


def test_a_reader_that_goes_away_ends_the_monitor() -> None:
    proc = start_monitor()
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        proc.stdout.close()  # as `rigcheck monitor | head -1` does
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]


def test_no_gpu_reader_is_one_line_in_words(capsys) -> None:  # type: ignore[no-untyped-def]
    sampler = StartingSampler([Sample(float(t), host(0.2)) for t in range(3)])
    sampler.gpus = []
    sampler.notes = [
        "nvml: NVMLError_LibraryNotFound: NVML Shared Library Not Found",
        "amdgpuinfo: FileNotFoundError: [Errno 2] No such file or directory: '/dev/dri/'",
        "sysfs: RuntimeError: no amdgpu card in sysfs",
    ]
    assert monitor(0.1, 1, False, sampler=sampler) == 0
    assert capsys.readouterr().err.splitlines() == ["# no GPU telemetry: no NVIDIA driver; no AMD GPU"]
