"""Every kind of expectation verdict (reference, host link, CPU share, training roofline, history, peers, fleet
peers) takes its figure's cause from the one cause function: a disturbed figure below its expectation is
INCONCLUSIVE, never WARN or FAIL; the same figure measured clean is a WARN or FAIL; a setting in force is named
as the cause. And the reference rule's words and tolerance follow each entry's own `warn_below`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.settings import HostSettings, in_force
from rigcheck.engine.fleet.compare_hosts import fleet_peer_verdicts
from rigcheck.engine.measure.references import FAIL_BELOW, Model, Reference, reference_for
from rigcheck.engine.trust.expect_cpu import cpu_verdict
from rigcheck.engine.trust.expect_link import LINK_SHARE_LOW, link_verdict
from rigcheck.engine.trust.expect_training import training_verdict
from rigcheck.engine.trust.history import Past, history_verdict
from rigcheck.engine.trust.peers import peer_verdicts
from rigcheck.engine.trust.reference import reference_verdict, reference_verdicts

H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
EPYC = "AMD EPYC 9454 48-Core Processor"
HOST = HostSettings(usable_cpus=16)
QUIET = {"samples": 12, "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
RIVAL = [{"pid": 825, "name": "python3", "gpu_memory": 874 * 2**20}]
RIVAL_REASON = "1 other process(es) on the GPU: python3 (pid 825, 874 MiB)"
GPU_RIVAL = {"trust": "SUSPECT", "other_gpu_processes": RIVAL, "trust_reasons": [RIVAL_REASON]}
GPU_RIVAL["trust_outside"] = [RIVAL_REASON]
CPU_REASON = "other processes kept 15.0 of 16 CPUs busy while this figure needed 16: stress (pid 4242)"
CPU_RIVAL = {"trust": "SUSPECT", "trust_reasons": [CPU_REASON], "trust_outside": [CPU_REASON]}


def settings(**env: str) -> dict[str, Any]:
    return {"settings": [s.as_dict() for s in in_force(env, HOST)]}


def gpu(stage: str, name: str, value: float, unit: str, model: str = H200, device: str = "cuda:0", **extra: Any):
    params: dict[str, Any] = {"bound": "compute", "timer": "events", "gpu_uuid": f"GPU-{device}", "broken": None}
    if name.startswith(("host to device", "device to host")):
        pcie = {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}
        params |= {"bound": "link", "pinned": True, "direction": "h2d", "pcie": pcie, "pci_bus_id": "0000:3b:00.0"}
    conditions = QUIET | {"gpu_name": model, "clock_ratio": 0.99, "utilization_mean_pct": 99.0} | extra
    return Measurement(stage, name, value, unit, 0.01, 20, device, params, conditions)


@pytest.fixture
def epyc_in_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU entry as bench/reference_runs.sh gives it: 998 GFLOP/s of a 3,891 limit (26%)."""
    from rigcheck.engine.measure import references

    model = Model("AMD EPYC 9454", r"\bEPYC 9454\b", "cpu", peaks={"cpu_fp32": 3891.2}, peak_source="16 CPUs")
    entry = Reference(
        "AMD EPYC 9454", "matmul fp32 512", 998.0, "GFLOP/s", "rigcheck-measured", "x" * 50,
        "rigcheck-measured, 3 runs, 2026-12", "cpu matmul", "512", 3891.2, "cpu_fp32", 0.6,
    )  # fmt: skip
    monkeypatch.setattr(references, "MODELS", (*references.MODELS, model))
    monkeypatch.setattr(references, "REFERENCES", (*references.REFERENCES, entry))


# Each kind: (its expectation's value, the figure below it at `share`, with `extra` conditions) -> its verdict.
Judge = Callable[[float, dict[str, Any]], Verdict]


def by_reference(share: float, extra: dict[str, Any]) -> Verdict:
    ref = reference_for(H200, "matmul bf16 4096")
    assert ref is not None
    verdict = reference_verdict(gpu("matmul", "matmul bf16 4096", share * ref.value, "TFLOP/s", **extra), ref)
    assert verdict is not None
    return verdict


def by_link(share: float, extra: dict[str, Any]) -> Verdict:
    expected = LINK_SHARE_LOW * 63.008
    verdict = link_verdict(gpu("bandwidth", "host to device pinned 1 GiB", share * expected, "GB/s", **extra), "bw")
    assert verdict is not None
    return verdict


def by_cpu(share: float, extra: dict[str, Any]) -> Verdict:
    params = {"bound": "host", "limit": 3891.2, "limit_basis": "16 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle"}
    m = Measurement("matmul", "matmul fp32 512", share * 998.0, "GFLOP/s", 0.01, 10, "cpu", params, QUIET | extra)
    verdict = cpu_verdict(m, "matmul", EPYC)
    assert verdict is not None
    return verdict


def h100_run() -> list[Measurement]:
    return [
        gpu("matmul", "matmul bf16 8192", 700.0, "TFLOP/s", H100),
        replace(gpu("bandwidth", "device copy 4 GiB", 2900.0, "GB/s", H100), params={"bound": "memory"}),
    ]


def by_roofline(share: float, extra: dict[str, Any]) -> Verdict:
    expected = 124_581.63  # 28.73% (the H200's) of this H100's roofline 433,619.3: worked out in test_roofline_edges.py
    m = gpu("training", "train c128 b8192 bf16", share * expected, "samples/s", H100, **extra)
    verdict = training_verdict(m, "training", h100_run())
    assert verdict is not None
    return verdict


def by_history(share: float, extra: dict[str, Any]) -> Verdict:
    earlier = [Past(41, 780.0, "TFLOP/s"), Past(40, 781.0, "TFLOP/s"), Past(38, 779.0, "TFLOP/s")]
    verdict = history_verdict(gpu("matmul", "matmul bf16 4096", share * 780.0, "TFLOP/s", **extra), earlier, "mm")
    assert verdict is not None
    return verdict


def by_peers(share: float, extra: dict[str, Any]) -> Verdict:
    figures = [gpu("matmul", "matmul bf16 4096", 780.0 + i, "TFLOP/s", device=f"cuda:{i}") for i in range(7)]
    figures.append(gpu("matmul", "matmul bf16 4096", share * 783.0, "TFLOP/s", device="cuda:7", **extra))
    (verdict,) = [v for v in peer_verdicts(figures, "matmul") if v.device == "cuda:7"]
    return verdict


def by_fleet(share: float, extra: dict[str, Any]) -> Verdict:
    figures = [
        (host, gpu("matmul", "matmul bf16 4096", 780.0 + i, "TFLOP/s", device=f"cuda:{i}"))
        for host in ("a", "b", "c")
        for i in range(2)
    ]
    figures[-1] = ("c", gpu("matmul", "matmul bf16 4096", share * 780.5, "TFLOP/s", device="cuda:1", **extra))
    (verdict,) = [v for h, v in fleet_peer_verdicts(figures) if (h, v.device) == ("c", "cuda:1")]
    return verdict


KINDS: dict[str, tuple[Judge, dict[str, Any], str]] = {
    # kind: (its verdict, someone else's load, a setting that slows it)
    "reference": (by_reference, GPU_RIVAL, "CUDA_LAUNCH_BLOCKING"),
    "link": (by_link, GPU_RIVAL, "CUDA_LAUNCH_BLOCKING"),
    "cpu": (by_cpu, CPU_RIVAL, "OMP_NUM_THREADS"),
    "roofline": (by_roofline, GPU_RIVAL, "PYTORCH_NO_CUDA_MEMORY_CACHING"),
    "history": (by_history, GPU_RIVAL, "CUDA_LAUNCH_BLOCKING"),
    "peers": (by_peers, GPU_RIVAL, "CUDA_LAUNCH_BLOCKING"),
    "fleet": (by_fleet, GPU_RIVAL, "CUDA_LAUNCH_BLOCKING"),
}
SLOW = 0.3  # below every kind's warn line, and below half (a FAIL where the kind fails)


@pytest.mark.parametrize("kind", KINDS)
def test_a_disturbed_figure_below_its_expectation_is_inconclusive_and_the_same_figure_clean_is_judged(
    kind: str, epyc_in_table: None
) -> None:
    judge, rival, _ = KINDS[kind]
    clean = judge(SLOW, {})
    assert clean.status in (Status.WARN, Status.FAIL), clean.explanation
    assert "likely cause: " in clean.explanation and "could not be judged" not in clean.explanation
    disturbed = judge(SLOW, rival)
    assert disturbed.status == Status.INCONCLUSIVE, disturbed.explanation
    reason = rival["trust_reasons"][0]
    assert f"could not be judged: {reason}" in disturbed.explanation or (
        "could not be judged: 1 other process(es) on the GPU: python3 (pid 825)" in disturbed.explanation
    )
    assert disturbed.numbers["cause_kind"] == "outside" and "likely cause" not in disturbed.explanation


@pytest.mark.parametrize("kind", KINDS)
def test_a_setting_in_force_below_its_expectation_is_named_and_never_fails_the_hardware(
    kind: str, epyc_in_table: None
) -> None:
    judge, _, name = KINDS[kind]
    value = "1"
    found = judge(SLOW, settings(**{name: value}))
    assert found.status == Status.INCONCLUSIVE, found.explanation
    assert f"could not be judged: {name}={value} is set: " in found.explanation
    assert found.numbers["cause_kind"] == "setting"


@pytest.mark.parametrize("kind", ["reference", "link", "cpu", "roofline"])
def test_a_figure_that_meets_its_expectation_with_a_setting_in_force_passes_without_naming_it(
    kind: str, epyc_in_table: None
) -> None:
    """Issue 41: a setting is a figure's cause only where the figure is off its expectation in the direction the
    setting explains; at its normal rate the setting changed nothing (it was named, on the old code)."""
    judge, _, name = KINDS[kind]
    passed = judge(0.95, settings(**{name: "1"}))  # at its normal rate, a setting that would slow it in force
    assert passed.status == Status.PASS and f"{name}=1 is set" not in passed.explanation
    assert judge(0.95, {}).status == Status.PASS and "is set" not in judge(0.95, {}).explanation


# -- each entry's own band --


def test_training_entries_warn_at_their_own_30_percent_and_say_so() -> None:
    ref = reference_for(H200, "train c128 b8192 bf16")
    assert ref is not None and ref.warn_below == pytest.approx(0.7)

    def judged(share: float) -> Verdict:
        m = gpu("training", "train c128 b8192 bf16", share * ref.value, "samples/s")
        verdict = reference_verdict(m, ref)
        assert verdict is not None
        return verdict

    inside = judged(0.705)  # 29.5% below: within a training entry's band (it would WARN for a matmul entry)
    assert inside.status == Status.PASS and inside.tolerance == pytest.approx(0.3)
    below = judged(0.695)
    assert below.status == Status.WARN and below.tolerance == pytest.approx(0.3)
    assert ": more than 30% below it; likely cause: " in below.explanation
    assert judged(FAIL_BELOW - 0.01).status == Status.FAIL

    (summary,) = reference_verdicts([gpu("training", "train c128 b8192 bf16", 0.75 * ref.value, "samples/s")], "t")
    assert summary.status == Status.PASS and "within 30% of their model's" in summary.explanation


def test_matmul_entries_keep_their_15_percent() -> None:
    ref = reference_for(H200, "matmul bf16 4096")
    assert ref is not None and ref.warn_below == pytest.approx(0.85)
    m = gpu("matmul", "matmul bf16 4096", 0.84 * ref.value, "TFLOP/s")
    verdict = reference_verdict(m, ref)
    assert verdict is not None and verdict.status == Status.WARN and verdict.tolerance == pytest.approx(0.15)
    assert ": more than 15% below it; " in verdict.explanation
    assert reference_verdict(replace(m, value=0.86 * ref.value), ref).status == Status.PASS  # type: ignore[union-attr]
    mixed = [
        replace(m, value=0.9 * ref.value),
        gpu("training", "train c128 b8192 bf16", 0.75 * 166000.0, "samples/s"),
    ]
    (summary,) = reference_verdicts(mixed, "x")
    assert "within their entries' bands (15%-30%)" in summary.explanation and summary.tolerance == pytest.approx(0.3)
