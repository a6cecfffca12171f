"""Times the passive health check (`rigcheck check`) beside the full `rigcheck run health`, for bench/RESULTS.md.

Each `check` is a fresh process as a scheduler starts it (Python start-up, imports, NVML, the kernel log,
the store), timed from spawn to exit; the same store across runs, so each compares with its history as it
would on a node. Also a breakdown in one process (import, read, judge and store) and `nvidia-smi -q` for
scale. Target (issue 33): under 1 s on one H200, under 2 s on 8.

    python3 bench/passive_check.py [--runs 10] [--health-runs 3] [--out DIR]

Run from the repository root; where rigcheck is not installed, `source bench/devpath.sh` first (it puts the
checkout on PYTHONPATH). Prints every figure it needs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "rigcheck.tui.cli"]
BREAKDOWN = """
import sys, time
t0 = time.perf_counter()
from rigcheck.engine.gate.passive import passive_check
from rigcheck.engine.gate.read import read_node
from rigcheck.engine.store import Store
t1 = time.perf_counter()
reading = read_node()
t2 = time.perf_counter()
store = Store(sys.argv[1])
t3 = time.perf_counter()
result = passive_check(store, reading=reading)
t4 = time.perf_counter()
print(f"import {t1 - t0:.3f} s; read {t2 - t1:.3f} s ({len(reading.gpus)} GPUs); open store {t3 - t2:.3f} s; "
      f"judge+history+store {t4 - t3:.3f} s; torch imported: {'torch' in sys.modules}")
print(f"state {result.state}: {result.line}")
"""


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - start, done.returncode, (done.stdout + done.stderr)


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times):.3f} s, min {min(times):.3f}, max {max(times):.3f} (n={len(times)})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--health-runs", type=int, default=3)
    parser.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp(prefix="passive-"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "passive-bench.db"
    env = os.environ | {"RIGCHECK_STORE": str(store), "PYTHONUNBUFFERED": "1"}
    print(f"python {sys.version.split()[0]}; store {store}; {os.cpu_count()} CPUs")

    checks, codes, first = [], [], ""
    for run in range(args.runs):
        took, code, text = timed([*CLI, "check", "--exit-style", "nagios", "--verbose"], env)
        checks.append(took)
        codes.append(code)
        if run == 0:
            first = text
    print("== rigcheck check (fresh process each, wall from spawn to exit)")
    print(spread(checks), f"exit codes {sorted(set(codes))}")
    print("first run's output:")
    print(first.rstrip())
    _, _, last = timed([*CLI, "check", "--exit-style", "nagios"], env)
    print("last run's output (with history):")
    print(last.rstrip())

    print("== the same in one process: where the time goes")
    for _ in range(3):
        _, _, text = timed([sys.executable, "-c", BREAKDOWN, str(store)], env)
        print(text.rstrip())

    if shutil.which("nvidia-smi"):
        smi = [timed(["nvidia-smi", "-q"], env)[0] for _ in range(3)]
        print("== nvidia-smi -q:", spread(smi))

    if args.health_runs:
        health, health_codes = [], []
        for _ in range(args.health_runs):
            took, code, text = timed([*CLI, "run", "health"], env)
            health.append(took)
            health_codes.append(code)
        print(
            "== rigcheck run health (full run, torch in a stage child):",
            spread(health),
            f"exit codes {sorted(set(health_codes))}",
        )
        print(text.rstrip()[-1500:])
        print(f"ratio (median run health / median check): {statistics.median(health) / statistics.median(checks):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
