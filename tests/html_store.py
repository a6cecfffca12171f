"""A stored run of a two-H200 host as the engine writes one, for the HTML report's tests: Probe's facts,
figures judged by the engine's own reference and peer rules, Health's verdicts, and a minute of telemetry.

Run as a script to write such a store and try the export by hand: `python tests/html_store.py /tmp/h.db`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fakes import FakeNvml
from rigcheck.engine.events import Facts, Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.measure.references import reference_for
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.engine.trust.peers import peer_verdicts
from rigcheck.engine.trust.reference import reference_verdict

H200 = "NVIDIA H200"
BUS_IDS = (b"00000000:1B:00.0", b"00000000:43:00.0")
SAMPLES = 120  # one every 0.5 s: a minute
SLOW_CLOCK_FROM = 60  # from this sample on, the clocks fall to the power cap
PROBE = {
    "interpreter": {"executable": "/opt/venv/bin/python", "version": "3.11.7", "implementation": "CPython"},
    "torch": {
        "torch": "2.11.0+cu130",
        "build": "CUDA",
        "cuda": "13.0",
        "hip": None,
        "dnn_library": "cuDNN",
        "dnn_version": 91500,
        "blas_info": "mkl",
    },
    "numpy": "2.4.6",
    "driver": {"vendor": "NVIDIA", "version": "580.95.05"},
    "devices": [
        {
            "index": i,
            "name": H200,
            "vendor": "NVIDIA",
            "arch": "sm_90",
            "compute_capability": "9.0",
            "multiprocessors": 132,
            "multiprocessor_kind": "SMs",
            "memory_torch_total": 150_754_820_096,
            "memory_driver_total": 150_754_820_096,
            "pci": bus.decode()[4:].lower(),
            "uuid": f"GPU-5d1c-{i}",
        }
        for i, bus in enumerate(BUS_IDS)
    ],
    "no_gpu_reason": None,
    "cpu": {
        "model": "Intel(R) Xeon(R) Platinum 8480C",
        "logical_cpus": 224,
        "physical_cores": 112,
        "usable_cpus": 224,
        "max_mhz": 3800.0,
        "governor": "performance",
        "flags": ["avx512f", "amx_bf16"],
        "kernel": "6.8.0-49-generic",
        "os": "Linux-6.8.0-49-generic-x86_64-with-glibc2.39",
    },
    "blas": [{"internal_api": "openblas", "version": "0.3.31", "architecture": "SapphireRapids"}],
    "environment": {"NCCL_P2P_DISABLE": "1"},
}
# (figure, unit, bound, cuda:0's value, cuda:1's value): cuda:1 is slow on bf16 (79% of the H200's 779.4)
FIGURES = (
    ("matmul bf16 8192", "TFLOP/s", "compute", 752.4, 612.3),
    ("device copy 4 GiB", "GB/s", "memory", 4251.0, 4190.5),
)
HEALTH = (  # (check, cuda:0, cuda:1, cuda:1's words where it is not a PASS)
    ("ecc", Status.PASS, Status.PASS, ""),
    ("pcie", Status.PASS, Status.WARN, "PCIe link at Gen4 x16 of Gen5 x16: a quarter of its bandwidth"),
    ("xid", Status.PASS, Status.PASS, ""),
)


def _conditions(device: str, slow: bool, reason: str | None) -> dict[str, object]:
    conditions: dict[str, object] = {
        "trust": "SUSPECT" if reason else "TRUSTED",
        "trust_reasons": [reason] if reason else [],
        "verified": True,
        "gpu_name": H200,
        "samples": 12,
        "sm_clock_mean_mhz": 1450.0 if slow else 1980.0,
        "sm_clock_max_mhz": 1980.0,
        "throttle": ["sw power cap"] if slow else [],
    }
    return conditions | ({"notes": ["power-limited at 700 W"]} if slow else {})


def _samples(started: float) -> list[Sample]:
    out = []
    for i in range(SAMPLES):
        slow = i >= SLOW_CLOCK_FROM
        nvml = FakeNvml(sm_clock=1450 if slow else 1980, reasons=0x4 if slow else 0, bus_ids=BUS_IDS)
        host = HostSample(cpus=224, load1=8.0 + i / 10, busy_cpus=3.0 + (i % 7), own_cpus=2.0, cpu_mhz=3100.0)
        out.append(Sample(started + 1.0 + i * 0.5, host, tuple(NvmlSource(nvml).read())))
    return out


def gpu_run(store: Store, reason: str = "SM clock at 73% of max: sw power cap") -> int:
    """The run, stored; `reason` is cuda:1's trust reason on its bf16 figure (a hostile one, in a test)."""
    run_id = store.begin_run(
        ["probe", "matmul", "health"], "all", "standard", "python3", ["run", "--profile", "standard"]
    )
    started = float(store.run(run_id)["started"])  # type: ignore[index]
    store.record(run_id, StageStarted("probe", "all", 101, "python3", t=started + 0.5))
    store.record(run_id, Facts("probe", PROBE, t=started + 2.0))
    store.record(run_id, Verdict("probe", "build", Status.PASS, "torch 2.11.0+cu130, CUDA 13.0", t=started + 2.0))
    store.record(run_id, StageFinished("probe", Status.PASS, 0, t=started + 3.0))
    store.record(run_id, StageStarted("matmul", "all", 102, "python3", t=started + 3.5))
    figures = []
    for name, unit, bound, *values in FIGURES:
        for gpu, value in enumerate(values):
            device, slow = f"cuda:{gpu}", gpu == 1 and unit == "TFLOP/s"
            params = {"bound": bound, "timer": "events", "gpu_name": H200}
            conditions = _conditions(device, slow, reason if slow else None)
            m = Measurement("matmul", name, value, unit, value * 0.004, 20, device, params, conditions, t=started + 40)
            figures.append(m)
            store.record(run_id, m)
    noisy = {"trust": "NOISY", "trust_reasons": ["timing spread 14% of the median"]}
    cpu = Measurement("matmul", "matmul fp32 4096", 2150.0, "GFLOP/s", 30.0, 9, "cpu", {"bound": "host"}, noisy)
    store.record(run_id, cpu)
    for m in figures:
        verdict = reference_verdict(m, reference_for(H200, m.name))
        if verdict is not None and verdict.status != Status.PASS:
            store.record(run_id, verdict)
    for verdict in peer_verdicts(figures, "matmul"):
        store.record(run_id, verdict)
    store.record(run_id, StageFinished("matmul", Status.WARN, 0, t=started + 45.0))
    store.record(run_id, StageStarted("health", "all", 103, "python3", t=started + 46.0))
    for check, *statuses, words in HEALTH:
        for gpu, status in enumerate(statuses):
            text = f"cuda:{gpu} {words if status != Status.PASS else check + ' fine'}"
            store.record(run_id, Verdict("health", check, status, text, device=f"cuda:{gpu}", t=started + 50))
    store.record(run_id, StageFinished("health", Status.WARN, 0, t=started + 52.0))
    for sample in _samples(started):
        store.record_sample(run_id, sample.t, sample.to_dict())
    store.end_run(run_id, "complete", 0)
    return run_id


if __name__ == "__main__":
    print(f"run {gpu_run(Store(Path(sys.argv[1])))} written to {sys.argv[1]}")
