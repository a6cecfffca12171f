"""`rigcheck check` and `history --gpu` as a scheduler runs them: a fresh process on the stand-in NVML, never
importing torch, one summary line first, the exit code of the style asked, and a watchdog for a wedged driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gate_fakes import gate_env, gate_library_fixture, kmsg_line, write_state  # noqa: F401 - a fixture

PROBE = (
    "import sys; from rigcheck.tui.cli import main; code = main(sys.argv[1:]); "
    "print('TORCH-IMPORTED' if 'torch' in sys.modules else 'no torch', file=sys.stderr); sys.exit(code)"
)


def rigcheck(library: Path, state: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=gate_env(library, state),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_check_never_imports_torch_and_speaks_each_exit_style(gate_library: Path, tmp_path: Path) -> None:
    state, log, store = tmp_path / "state", tmp_path / "kmsg", str(tmp_path / "store.db")
    write_state(state)
    log.write_text(kmsg_line(5, 1, 13, "Graphics Exception"))
    common = ["--store", store, "check", "--kernel-log", str(log), "--expect-gpus", "2"]
    first = rigcheck(gate_library, state, *common, "--exit-style", "nagios")
    assert "no torch" in first.stderr and "TORCH-IMPORTED" not in first.stderr
    line = first.stdout.splitlines()[0]
    assert first.returncode == 1 and line.startswith("WARN: nvml:1 new XID 13") and len(line) <= 80
    write_state(state, remap_pending0=1, ecc_uncorrected1=2)
    for style, code in (("rigcheck", 1), ("nagios", 2), ("npd", 1)):
        done = rigcheck(gate_library, state, *common, "--exit-style", style)
        assert done.returncode == code, done.stdout + done.stderr
        assert done.stdout.splitlines()[0].startswith("CRITICAL: nvml:1 uncorrectable ECC")
        details = done.stderr if style == "npd" else done.stdout  # npd takes all of stdout as its message
        assert "FAIL  ecc" in details and "WARN  row-remap" in details
        assert style != "npd" or done.stdout.count("\n") == 1


def test_a_wedged_driver_gives_unknown_before_the_timeout(gate_library: Path, tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "kmsg"
    write_state(state, init_sleep=60)
    log.write_text("")
    args = ["check", "--no-store", "--kernel-log", str(log), "--timeout", "2"]
    for style, code in (("rigcheck", 7), ("nagios", 3), ("npd", 2)):
        done = rigcheck(gate_library, state, *args, "--exit-style", style, timeout=50)
        assert done.returncode == code
        assert done.stdout.startswith("UNKNOWN: the check did not finish in 2 s")


def test_bad_input_is_one_line_and_the_usage_code(gate_library: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_state(state)
    done = rigcheck(gate_library, state, "check", "--no-store", "--kernel-log", str(tmp_path / "none"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--kernel-log" in done.stderr
    done = rigcheck(gate_library, state, "check", "--exit-style", "icinga")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_history_gpu_shows_one_gpus_timeline(gate_library: Path, tmp_path: Path) -> None:
    state, log, store = tmp_path / "state", tmp_path / "kmsg", str(tmp_path / "store.db")
    log.write_text("")
    for corrected in (12, 12, 400):
        write_state(state, ecc_corrected1=corrected)
        rigcheck(gate_library, state, "--store", store, "check", "--kernel-log", str(log))
    uuid = "GPU-00000000-0000-0000-0000-000000000001"
    done = rigcheck(gate_library, state, "--store", store, "history", "--gpu", uuid)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["1", "2", "3"]
    assert [row.split()[4] for row in rows] == ["12", "12", "400"]
    assert "check" in rows[0] and "Gen5 x16" in rows[0]
    missing = rigcheck(gate_library, state, "--store", store, "history", "--gpu", "GPU-nope")
    assert missing.returncode == 2 and "no run in the store has a GPU with UUID 'GPU-nope'" in missing.stderr
    escape = rigcheck(gate_library, state, "--store", store, "history", "--gpu", "GPU\x1b[31mred")
    assert escape.returncode == 2 and "\x1b" not in escape.stderr and "'GPU\\x1b[31mred'" in escape.stderr


def test_every_gate_module_imports_without_torch() -> None:
    """The passive path as a scheduler's hook loads it: the engine's gate package and its CLI, in a fresh process."""
    modules = [
        "rigcheck.engine.gate." + name
        for name in ("checks", "full_run", "kmsg", "memory", "outcome", "passive", "read", "slurm", "timeline")
    ]
    code = f"import sys; import {', '.join([*modules, 'rigcheck.tui.cli_gate'])}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"
