"""A stored fleet run of 16 hosts with 8 GPUs each, for the grid's tests and for trying the app by hand.

One host is lost after its first GPUs reported; one host has a FAIL on cuda:3; one a host-level WARN.
Run as a script to write such a store: `python tests/fleet_store.py /tmp/fleet.db`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.events import Facts, Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import Store

HOSTS = [f"dgx-h200-{n:02d}" for n in range(16)]
LOST = HOSTS[6]
FAILING = HOSTS[11]  # its cuda:3 fails the sweep
SLOW_HOST = HOSTS[2]  # a host-level WARN (no device)
GPUS = 8
H200 = {"name": "NVIDIA H200", "arch": "sm_90", "multiprocessors": 132, "multiprocessor_kind": "SMs"}


def bf16(host_index: int, gpu: int) -> float:
    """A plausible, distinct figure per GPU; the 16384 shape runs slower, so 4096 is the best."""
    return 760.0 + host_index + gpu / 10


def record_host(store: Store, run_id: int, index: int, host: str) -> None:
    gpus = 4 if host == LOST else GPUS  # the lost host reported half its GPUs, then nothing
    store.record(run_id, Facts("probe", {"devices": [H200 | {"index": i} for i in range(GPUS)]}), host=host)
    store.record(run_id, StageStarted("matmul", "all", 100 + index, "python3"), host=host)
    for gpu in range(gpus):
        device = f"cuda:{gpu}"
        trust = "NOISY" if (index + gpu) % 7 == 0 else "TRUSTED"
        for name, value, unit in (
            ("matmul fp32 4096", 51.0 + gpu / 10, "TFLOP/s"),
            ("matmul bf16 4096", bf16(index, gpu), "TFLOP/s"),
            ("matmul bf16 16384", bf16(index, gpu) - 90.0, "TFLOP/s"),
        ):
            conditions = {"trust": trust, "trust_reasons": [], "verified": True}
            store.record(
                run_id,
                Measurement("matmul", name, value, unit, 0.5, 5, device, {"dtype": name.split()[1]}, conditions),
                host=host,
            )
        failing = host == FAILING and gpu == 3
        status = Status.FAIL if failing else Status.PASS
        words = "wrong results: 12 elements off against the first result" if failing else "fine"
        store.record(run_id, Verdict("matmul", "sweep", status, words, device=device), host=host)
    if host == SLOW_HOST:
        store.record(run_id, Verdict("matmul", "host", Status.WARN, f"{host} is 9% below the fleet"), host=host)
    if host != LOST:
        store.record(run_id, StageFinished("matmul", Status.FAIL if host == FAILING else Status.PASS), host=host)


def fleet_run(store: Store) -> int:
    states = {host: "lost" if host == LOST else "done" for host in HOSTS}
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "r1", "hosts": HOSTS, "states": states})
    for index, host in enumerate(HOSTS):
        record_host(store, run_id, index, host)
    store.end_run(run_id, "complete", 1)
    return run_id


if __name__ == "__main__":
    print(f"fleet run {fleet_run(Store(Path(sys.argv[1])))} in {sys.argv[1]}")
