"""Times rigcheck's answers that measure nothing (issue 34, item 10): `run --detach` returning, a `--device` this
host cannot have being refused, and `export --format html`. Each should be under a second on a quiet host.

    python bench/slow_answers.py [--runs 5]

It makes its own store in a temporary folder (one quick CPU run to export), times each command as a whole process
`--runs` times, and prints a Markdown table of wall and CPU seconds (median, min, max) with the host's load
before and after. To time another checkout, put a folder holding `rigcheck/{engine,tui,themes,fleet}` (links to
that checkout's folders) first on PYTHONPATH: the commands run as `python -m rigcheck.tui.cli`.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "rigcheck.tui.cli"]


def rigcheck(store: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--store", str(store), *args], capture_output=True, text=True, timeout=timeout)


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall s, CPU s of the command and the children it waited for, the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def gpu_host() -> bool:
    return any(os.path.exists(p) for p in ("/proc/driver/nvidia", "/dev/kfd", "/dev/dxg"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rigcheck-bench-"))
    store = folder / "s.db"
    made = rigcheck(store, "run", "probe", "bandwidth", "--device", "cpu", "--profile", "quick")
    if made.returncode not in (0, 1):
        print(f"the run to export failed ({made.returncode}): {made.stderr[-500:]}", file=sys.stderr)
        return 1
    wrong_device = "cuda:99" if gpu_host() else "cuda:0"
    cases = {
        "run probe --detach (default device)": [*CLI, "--store", str(store), "run", "probe", "--detach"],
        f"run probe --device {wrong_device} (refused)": [
            *CLI,
            "--store",
            str(store),
            "run",
            "probe",
            "--device",
            wrong_device,
            "--cold",
        ],
        # what --detach waits for besides its own start: the engine's imports (its CPU is not the command's)
        "the engine's imports alone (part of --detach)": [*CLI[:1], "-c", "import rigcheck.engine.run.engine_main"],
        "export last --format html -o FILE": [
            *CLI,
            "--store",
            str(store),
            "export",
            "1",
            "--format",
            "html",
            "-o",
            str(folder / "r.html"),
        ],
    }
    load_before = os.getloadavg()
    rows = []
    for name, command in cases.items():
        walls, cpus, codes = [], [], set()
        for _ in range(args.runs + 1):  # the first is a warm-up (disk cache, .pyc files)
            wall, cpu, done = timed(command)
            codes.add(done.returncode)
            walls.append(wall)
            cpus.append(cpu)
            found = re.search(r"run (\d+) started in the background", done.stdout)
            if found:  # let the detached run end before the next timing, so runs never overlap
                rigcheck(store, "follow", found.group(1))
        walls, cpus = walls[1:], cpus[1:]
        rows.append((name, walls, cpus, sorted(codes)))
    load_after = os.getloadavg()
    print(f"host: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {args.runs} timed runs each after a warm-up")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}\n")
    print("| answer | wall median (min-max) s | CPU median s | exit codes |")
    print("| --- | ---: | ---: | --- |")
    for name, walls, cpus, codes in rows:
        wall = f"{statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f})"
        print(f"| {name} | {wall} | {statistics.median(cpus):.2f} | {', '.join(map(str, codes))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
