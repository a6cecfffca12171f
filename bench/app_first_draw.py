"""How long the app takes to draw its first screen: the real command in a pseudo-terminal at 80x24.

Usage: python bench/app_first_draw.py [RUNS] [-- extra rigcheck arguments]
For each run: wall seconds from exec to the first frame (the bytes that draw the Stages panel), the app
process's own CPU seconds by then (less moved by other processes' load than the wall time), and, for the
default command (no --device), when torch's answer on the GPUs replaced telemetry's guess (the title's
"asking torch" goes). Prints the load average beside each figure: on a shared host the wall time moves
with the others' load. Needs a Linux /proc and the app's dependencies (textual): run it on the CPU host.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

COLS, ROWS = 80, 24
TIMEOUT_S = 60.0


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, from /proc (children not included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(extra: list[str], store: str) -> tuple[float, float, float | None]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", RIGCHECK_STORE=store, TEXTUAL_ANIMATIONS="none")
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigcheck.tui.cli", *extra],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen, drawn, cpu, answered = b"", None, 0.0, None
    asking = "--device" not in extra
    try:
        while time.monotonic() - start < TIMEOUT_S:
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                seen += os.read(master, 65536)
            if drawn is None and b"Stages" in seen:
                drawn, cpu = time.monotonic() - start, cpu_seconds(proc.pid)
                time.sleep(0.2)  # the rest of the first frame
                seen += os.read(master, 65536) if select.select([master], [], [], 0)[0] else b""
                if not asking or b"asking torch" not in seen:  # a version that asked torch before drawing
                    break
            if drawn is not None and asking and b"asking torch" in seen and b"(idle)" in seen.rsplit(b"asking", 1)[1]:
                answered = time.monotonic() - start
                break
    finally:
        os.write(master, b"\x11")  # ctrl+q
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)
    if drawn is None:
        raise SystemExit(f"no first draw within {TIMEOUT_S:.0f} s")
    return drawn, cpu, answered


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    runs = int(args[0]) if args and args[0] != "--" else 5
    with tempfile.TemporaryDirectory() as folder:
        store = os.path.join(folder, "bench.db")
        one_run(extra, store)  # a warm-up: the store's creation and the OS's file cache
        walls, cpus, answers = [], [], []
        for index in range(runs):
            load = os.getloadavg()[0]
            wall, cpu, answered = one_run(extra, store)
            walls.append(wall)
            cpus.append(cpu)
            if answered is not None:
                answers.append(answered)
            torch = f", torch's answer at {answered:.2f} s" if answered is not None else ""
            print(f"run {index + 1}: first draw {wall:.2f} s wall, {cpu:.2f} s CPU{torch} (load {load:.2f})")
    print(
        f"rigcheck {' '.join(extra) or '(no arguments)'} at {COLS}x{ROWS}, {runs} runs: first draw median"
        f" {statistics.median(walls):.2f} s wall (best {min(walls):.2f}), {statistics.median(cpus):.2f} s CPU"
        + (f"; torch's answer median {statistics.median(answers):.2f} s" if answers else "")
        + f"; load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
