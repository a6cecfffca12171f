"""A stored fleet run of 16 hosts with 8 GPUs each, for the grid's tests and for trying the app by hand.

One host is lost after its first GPUs reported; one host has a FAIL on cuda:3; one a host-level WARN.
Run as a script to write such a store: `python tests/fleet_store.py /tmp/fleet.db` (add 1024 for issue 25's
1,024 hosts x 8 GPUs, big_fleet_run).
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


def big_hosts(n: int) -> list[str]:
    return [f"gpu-node-{i:04d}" for i in range(n)]


def big_fleet_run(store: Store, n: int = 1024) -> int:
    """A fleet run of `n` hosts x 8 GPUs (issue 25's scale), written in one transaction: every host as
    record_host writes one, host 6 lost, host 11 with a FAIL on cuda:3, host 2 with a host-level WARN."""
    hosts = big_hosts(n)
    lost, failing, slow = hosts[6], hosts[11], hosts[2]
    states = {host: "lost" if host == lost else "done" for host in hosts}
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "big", "hosts": hosts, "states": states})
    with store.transaction():
        for index, host in enumerate(hosts):
            store.record(run_id, Facts("probe", {"devices": [H200 | {"index": i} for i in range(GPUS)]}), host=host)
            store.record(run_id, StageStarted("matmul", "all", 100 + index, "python3"), host=host)
            for gpu in range(4 if host == lost else GPUS):
                device = f"cuda:{gpu}"
                trust = "NOISY" if (index + gpu) % 7 == 0 else "TRUSTED"
                conditions = {"trust": trust, "trust_reasons": [], "verified": True}
                for name, value in (("matmul bf16 4096", bf16(index % 100, gpu)), ("matmul fp32 4096", 51.0)):
                    figure = Measurement("matmul", name, value, "TFLOP/s", 0.5, 5, device, {}, conditions)
                    store.record(run_id, figure, host=host)
                failing_gpu = host == failing and gpu == 3
                words = "wrong results: 12 elements off" if failing_gpu else "fine"
                status = Status.FAIL if failing_gpu else Status.PASS
                store.record(run_id, Verdict("matmul", "sweep", status, words, device=device), host=host)
            if host == slow:
                store.record(run_id, Verdict("matmul", "host", Status.WARN, f"{host} is 9% below the fleet"), host=host)
            if host != lost:
                store.record(run_id, StageFinished("matmul", Status.PASS), host=host)
    store.end_run(run_id, "complete", 1)
    return run_id


if __name__ == "__main__":  # `python tests/fleet_store.py DB [HOSTS]`: 16 hosts, or HOSTS x 8 GPUs
    write = fleet_run if len(sys.argv) < 3 else lambda store: big_fleet_run(store, int(sys.argv[2]))
    print(f"fleet run {write(Store(Path(sys.argv[1])))} in {sys.argv[1]}")
