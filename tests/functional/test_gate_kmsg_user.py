"""Issue 44's drain by any local user, with a real second user and the live kernel log: a program she names like
an XID line (`NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus`) and makes segfault puts that text in
/dev/kmsg, since the kernel prints the faulting file's name. Before, `check` called it CRITICAL and the Slurm
script drained the node at every interval; only a line the driver wrote is an XID now."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ci_tools import skip_or_fail
from gate_fakes import BUS, gate_env, gate_library_fixture, write_state  # noqa: F401 - a fixture
from other_user import second_user, shared_folder

KMSG = Path("/dev/kmsg")
NAME = f"NVRM: Xid (PCI:{BUS[0]}): 79, GPU has fallen off the bus"


def kernel_log_text() -> str:
    """Every record now in the kernel's ring buffer (a read of /dev/kmsg, as the gate makes)."""
    from rigcheck.engine.facts.xid import read_kmsg

    found = read_kmsg(KMSG)
    return "".join(found) if isinstance(found, list) else ""


@pytest.mark.timeout(300)
def test_a_users_program_named_like_an_xid_drains_nothing(gate_library: Path, tmp_path: Path) -> None:
    if not os.access(KMSG, os.R_OK) or not kernel_log_text():
        skip_or_fail("the live kernel log /dev/kmsg is not readable here")
    if Path("/proc/sys/debug/exception-trace").read_text().strip() != "1":
        skip_or_fail("this kernel does not log user segfaults (debug.exception-trace is 0)")
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        skip_or_fail("no C compiler (gcc) to build the segfaulting program")
    state = tmp_path / "state"
    write_state(state)
    with second_user() as mallory, shared_folder() as base:
        source = base / "crash.c"
        source.write_text("int main(void) { *(volatile int *)0 = 1; return 0; }\n")
        program = base / NAME
        subprocess.run([gcc, "-O0", "-o", str(program), str(source)], check=True, timeout=120)
        program.chmod(0o755)
        end = time.monotonic() + 60
        while f"in {NAME}[" not in kernel_log_text():  # until the kernel has written her words into its log
            assert time.monotonic() < end, "the segfault line never reached /dev/kmsg"
            done = subprocess.run([str(program)], user=mallory, cwd="/", capture_output=True, timeout=60, check=False)
            assert done.returncode < 0  # she made it segfault (again, if the kernel's rate limit ate the last one)
            time.sleep(1.0)
    check = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "check", "--no-store", "--expect-gpus", "2", "-v"],
        env=gate_env(gate_library, state),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0 and check.stdout.startswith("OK: 2 GPU(s) healthy"), check.stdout + check.stderr
    assert "XID 79" not in check.stdout
    saved = tmp_path / "dmesg"  # beside it, the same words as the driver writes them: CRITICAL
    saved.write_text(f"[ 1234.567890] {NAME}\n")
    driver = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigcheck.tui.cli",
            "check",
            "--no-store",
            "--expect-gpus",
            "2",
            "--kernel-log",
            str(saved),
        ],
        env=gate_env(gate_library, state),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert driver.returncode == 1 and driver.stdout.startswith("CRITICAL: nvml:0 XID 79"), driver.stdout
