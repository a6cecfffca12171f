"""Every figure against an expectation: a pinned host copy against the link NVML read under load (a fake NVML
with one GPU trained down to Gen4 x8), a slow GPU among 8 by median and MAD, a drifted history, and a figure with
no reference at all; each beside a clean case, with an edge on each side of its threshold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.references import Model, Reference
from rigcheck.engine.trust.expect_cpu import cpu_verdict
from rigcheck.engine.trust.expect_link import LINK_SHARE_LOW, link_verdict
from rigcheck.engine.trust.expectations import NO_REFERENCE, coverage_verdict, expectation_verdicts
from rigcheck.engine.trust.history import Past, history_verdict, history_verdicts
from rigcheck.engine.trust.peers import peer_verdicts

H200 = "NVIDIA H200"
GEN5_X16 = {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}
TOP = 63.008  # Gen5 x16, one way, after encoding


def copy(
    value: float,
    device: str = "cuda:0",
    pcie: dict[str, Any] | None = None,
    trust: str = "TRUSTED",
    direction: str = "h2d",
    pinned: bool = True,
    name: str | None = None,
) -> Measurement:
    label = {"h2d": "host to device", "d2h": "device to host"}[direction]
    params: dict[str, Any] = {"bound": "link", "pinned": pinned, "direction": direction, "limit": TOP}
    params |= {"timer": "events", "pci_bus_id": "0000:3b:00.0", "gpu_uuid": f"GPU-{device[-1]}"}
    if pcie is not None:
        params["pcie"] = pcie
    conditions = {"gpu_name": H200, "trust": trust, "samples": 9}
    kind = "pinned" if pinned else "pageable"
    return Measurement("bandwidth", name or f"{label} {kind} 1 GiB", value, "GB/s", 0.01, 6, device, params, conditions)


# -- the host link --


@pytest.fixture
def fake_nvml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import build_fake_nvml
    from rigcheck.engine.hw import nvml

    monkeypatch.setattr(nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))


def test_a_link_trained_down_to_gen4_x8_is_named_with_its_next_step(fake_nvml: None) -> None:
    from rigcheck.engine.stages.bandwidth import read_link

    trained = read_link("0000:3b:00.0")  # the fake's second GPU: Gen4 x8 of Gen5 x16
    assert trained == {"gen": 4, "width": 8, "max_gen": 5, "max_width": 16}
    verdict = link_verdict(copy(13.4, "cuda:1", trained | {"under_load": True}), "bandwidth")
    assert verdict is not None and verdict.status == Status.WARN
    assert verdict.explanation.startswith(
        "cuda:1's link runs at Gen4 x8 of Gen5 x16 (while copying): H2D 13.4 GB/s, a quarter of what this card "
        "carries (21% of 63); next: reseat the card, check the slot's BIOS bifurcation and riser"
    )
    assert verdict.numbers["trained_down"] is True
    clean = read_link("0000:18:00.0")  # the first: Gen5 x16, its maximum
    assert clean == {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}
    passed = link_verdict(copy(55.2, pcie=clean | {"under_load": True}), "bandwidth")
    assert passed is not None and passed.status == Status.PASS
    assert "88% of its Gen5 x16 link (63), expected 80-88%" in passed.explanation
    assert read_link("0000:99:00.0") is None and read_link(None) is None


def test_a_copy_well_below_what_its_full_link_carries_warns_then_fails() -> None:
    expected = LINK_SHARE_LOW * TOP
    edge = 0.85 * expected
    assert link_verdict(copy(edge * 1.002, pcie=GEN5_X16), "bandwidth").status == Status.PASS  # type: ignore[union-attr]
    slow = link_verdict(copy(edge * 0.998, pcie=GEN5_X16), "bandwidth")
    assert slow is not None and slow.status == Status.WARN and "likely cause:" in slow.explanation
    assert link_verdict(copy(0.5 * expected * 1.002, pcie=GEN5_X16), "bandwidth").status == Status.WARN  # type: ignore[union-attr]
    failed = link_verdict(copy(0.5 * expected * 0.998, pcie=GEN5_X16), "bandwidth")
    assert failed is not None and failed.status == Status.FAIL
    rival = "another process that rigcheck cannot see is using cuda:0: 874 MiB, GPU busy 100%"
    busy = copy(10.0, pcie=GEN5_X16, trust="SUSPECT")
    busy = replace(busy, conditions=busy.conditions | {"trust_reasons": [rival], "trust_outside": [rival]})
    unjudged = link_verdict(busy, "bandwidth")  # someone else's load never makes a FAIL, nor a WARN
    assert unjudged is not None and unjudged.status == Status.INCONCLUSIVE
    assert f"could not be judged: {rival}" in unjudged.explanation and unjudged.numbers["would_be"] == "FAIL"
    disturbed = link_verdict(copy(10.0, pcie=GEN5_X16, trust="SUSPECT"), "bandwidth")
    assert disturbed is not None and disturbed.status == Status.WARN  # SUSPECT for no outside cause: not clean


def test_a_link_read_at_idle_says_so_and_copies_without_a_link_are_not_judged() -> None:
    idle = link_verdict(copy(26.0, pcie={"gen": 4, "width": 16, "max_gen": 5, "max_width": 16}), "bandwidth")
    assert idle is not None and "at idle, and it could not be read under load" in idle.explanation
    assert "half of what this card carries" in idle.explanation
    assert link_verdict(copy(26.0), "bandwidth") is None  # no link read: nothing to judge it against
    assert link_verdict(copy(5.0, pcie=GEN5_X16, pinned=False), "bandwidth") is None  # pageable: the host's


# -- peers: median and MAD, both ways --


def eight(slow: float | None = None, fast: float | None = None) -> list[Measurement]:
    values = [55.3, 55.1, 55.4, 55.0, 55.2, 55.4, 55.3, 55.1]
    if slow is not None:
        values[3] = slow
    if fast is not None:
        values[5] = fast
    return [copy(v, f"cuda:{i}", GEN5_X16) for i, v in enumerate(values)]


def test_a_slow_gpu_among_eight_is_named_against_its_peers_median_with_both_numbers() -> None:
    (warn,) = peer_verdicts(eight(slow=14.2), "bandwidth")
    assert warn.status == Status.WARN and warn.device == "cuda:3"
    assert warn.explanation.startswith(
        "cuda:3 host to device pinned 1 GiB 14.2 GB/s, 23% of its link (63): 0.26x its 7 peers' median (55.3, MAD 0.1"
    )
    assert warn.numbers["median"] == 55.3 and warn.numbers["ratio"] == pytest.approx(14.2 / 55.3, abs=1e-4)
    (clean,) = peer_verdicts(eight(), "bandwidth")
    assert clean.status == Status.PASS and "off the median of its peers" in clean.explanation


def test_a_fast_gpu_is_named_too_and_the_edges_hold() -> None:
    (fast,) = peer_verdicts(eight(fast=70.0), "bandwidth")
    assert fast.device == "cuda:5" and "27% above" in fast.explanation and "check the peers" in fast.explanation
    median = 55.25  # of the other seven once cuda:3 is moved
    assert [v.device for v in peer_verdicts(eight(slow=median * 0.899), "bandwidth")] == ["cuda:3"]
    assert [v.status for v in peer_verdicts(eight(slow=median * 0.901), "bandwidth")] == [Status.PASS]


def test_peers_that_scatter_widely_name_none_and_two_name_only_the_lower() -> None:
    wide = [copy(v, f"cuda:{i}", GEN5_X16) for i, v in enumerate([40.0, 48.0, 55.0, 62.0, 44.0, 58.0, 51.0, 36.0])]
    assert [v.status for v in peer_verdicts(wide, "bandwidth")] == [Status.PASS]  # within 3 MADs of each other
    pair = [copy(55.0, "cuda:0", GEN5_X16), copy(40.0, "cuda:1", GEN5_X16)]
    assert [v.device for v in peer_verdicts(pair, "bandwidth")] == ["cuda:1"]


# -- history: the same GPU's own clean runs --


def test_a_drift_from_its_own_clean_median_is_a_warn_naming_the_run() -> None:
    earlier = [Past(41, 55.2, "GB/s"), Past(40, 55.0, "GB/s"), Past(38, 55.4, "GB/s")]
    warn = history_verdict(copy(44.0, pcie=GEN5_X16), earlier, "bandwidth")
    assert warn is not None and warn.status == Status.WARN
    assert warn.explanation.startswith(
        "cuda:0 host to device pinned 1 GiB 44 GB/s: 20% below its own clean median 55.2 "
        "(compared with run 41, the latest of 3 earlier clean figure(s): run(s) 41, 40, 38)"
    )
    assert history_verdict(copy(55.1, pcie=GEN5_X16), earlier, "bandwidth") is None
    steady = [Past(7, 100.0, "GB/s"), Past(6, 100.0, "GB/s"), Past(5, 100.0, "GB/s")]
    assert history_verdict(copy(89.9), steady, "bandwidth") is not None  # just past 10%
    assert history_verdict(copy(90.1), steady, "bandwidth") is None
    assert history_verdict(copy(110.2), steady, "bandwidth").explanation.count("above")  # type: ignore[union-attr]
    assert history_verdict(copy(50.0), steady[:2], "bandwidth") is None  # two earlier runs are no median yet


def test_history_judges_only_clean_figures_in_the_same_unit_and_respects_its_own_scatter() -> None:
    three = [Past(7, 100.0, "GB/s"), Past(6, 101.0, "GB/s"), Past(5, 99.0, "GB/s")]
    assert history_verdict(copy(50.0, trust="SUSPECT"), three, "bandwidth") is None
    assert history_verdict(copy(50.0, pinned=False), three, "bandwidth") is None  # pageable: the host's cache
    assert history_verdict(copy(50.0), [replace(p, unit="TFLOP/s") for p in three], "bandwidth") is None
    assert history_verdict(copy(50.0), [], "bandwidth") is None
    scattered = [Past(1, 100.0, "GB/s"), Past(2, 130.0, "GB/s"), Past(3, 80.0, "GB/s")]
    assert history_verdict(copy(85.0), scattered, "bandwidth") is None  # 15% below, inside its own scatter
    assert history_verdict(copy(5.0), scattered, "bandwidth") is not None  # beyond 3 scaled MADs
    assert list(history_verdicts([copy(50.0)], "bandwidth", None)) == []


# -- a figure with no reference --


def matmul(value: float, gpu: str = H200, name: str = "matmul bf16 4096", device: str = "cuda:0") -> Measurement:
    params = {"bound": "compute", "timer": "events", "gpu_uuid": "GPU-0"}
    conditions = {"gpu_name": gpu, "trust": "TRUSTED", "samples": 9}
    return Measurement("matmul", name, value, "TFLOP/s", 0.01, 20, device, params, conditions)


def test_a_figure_with_no_reference_is_counted_and_never_a_pass() -> None:
    unknown = matmul(90.0, gpu="NVIDIA RTX 9999")
    cpu = Measurement("matmul", "matmul fp32 512", 900.0, "GFLOP/s", 0.01, 20, "cpu", {"bound": "host"}, {})
    error = Measurement("verify", "fp32 4096 error", 1e-6, "rel", None, 1, "cuda:0", {}, {"gpu_name": H200})
    verdict = coverage_verdict([matmul(770.0), unknown, cpu, error], "matmul", None)
    assert verdict is not None and verdict.status == Status.NOT_JUDGED
    assert verdict.numbers == {"judged": 1, "not_judged": 2, "figures": 3, "models": ["NVIDIA RTX 9999", "this CPU"]}
    assert NO_REFERENCE in verdict.explanation and "cuda:0 matmul bf16 4096" in verdict.explanation
    judged = coverage_verdict([matmul(770.0), copy(55.0, pcie=GEN5_X16)], "matmul", None)
    assert judged is not None and judged.status == Status.PASS and judged.numbers["not_judged"] == 0
    baseline = {"figures": {"NVIDIA RTX 9999/matmul bf16 4096": {"value": 95.0, "unit": "TFLOP/s"}}}
    assert coverage_verdict([unknown], "matmul", baseline).numbers["not_judged"] == 0  # type: ignore[union-attr]


def test_the_stage_entry_gives_links_history_and_the_count_together() -> None:
    figures = [copy(13.4, "cuda:1", {"gen": 4, "width": 8, "max_gen": 5, "max_width": 16, "under_load": True})]
    figures.append(matmul(90.0, gpu="NVIDIA RTX 9999"))
    verdicts = list(expectation_verdicts(figures, "bandwidth", None, lambda m: [Past(3, 120.0, "TFLOP/s")] * 3))
    assert [(v.check, v.status) for v in verdicts] == [
        ("link host to device pinned 1 GiB", Status.WARN),
        ("history matmul bf16 4096", Status.WARN),
        ("expectations", Status.NOT_JUDGED),
    ]


# -- the CPU: cores x clock x FLOP/cycle, times the share its model reaches --

EPYC = "AMD EPYC 9454 48-Core Processor"


@pytest.fixture
def epyc_in_table(monkeypatch: pytest.MonkeyPatch) -> Reference:
    """A CPU entry as the lead pastes it from bench/reference_runs.sh: 998 GFLOP/s of a 3,891 limit (26%)."""
    from rigcheck.engine.measure import references

    model = Model("AMD EPYC 9454", r"\bEPYC 9454\b", "cpu", peaks={"cpu_fp32": 3891.2}, peak_source="16 CPUs")
    entry = Reference(
        "AMD EPYC 9454", "matmul fp32 512", 998.0, "GFLOP/s", "rigcheck-measured", "x" * 50,
        "rigcheck-measured, 3 runs, 2026-12", "cpu matmul", "512", 3891.2, "cpu_fp32", 0.6,
    )  # fmt: skip
    assert references.entry_problems(entry, (model,)) == []
    monkeypatch.setattr(references, "MODELS", (*references.MODELS, model))
    monkeypatch.setattr(references, "REFERENCES", (*references.REFERENCES, entry))
    return entry


def cpu_matmul(value: float, limit: float = 3891.2, threads: int = 16) -> Measurement:
    params = {"bound": "host", "limit": limit, "limit_basis": "16 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle"}
    params |= {"threads": threads}
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 0.01, 10, "cpu", params, {"trust": "TRUSTED"})


def test_a_cpu_figure_far_below_what_its_model_reaches_is_named(epyc_in_table: Reference) -> None:
    fine = cpu_verdict(cpu_matmul(990.0), "matmul", EPYC)
    assert fine is not None and fine.status == Status.PASS
    one_thread = cpu_verdict(cpu_matmul(157.0, threads=1), "matmul", EPYC)
    assert one_thread is not None and one_thread.status == Status.WARN
    assert one_thread.explanation.startswith(
        "cpu matmul fp32 512 157 GFLOP/s: 4% of 16 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle (3,891), against the 26% "
        "the AMD EPYC 9454 reaches (rigcheck-measured, 3 runs, 2026-12): 0.16x of the 998 expected with 1 thread(s)"
    )
    assert cpu_verdict(cpu_matmul(0.601 * 998.0), "matmul", EPYC).status == Status.PASS  # type: ignore[union-attr]
    assert cpu_verdict(cpu_matmul(0.599 * 998.0), "matmul", EPYC).status == Status.WARN  # type: ignore[union-attr]
    assert cpu_verdict(cpu_matmul(1.0), "matmul", EPYC).status == Status.WARN  # type: ignore[union-attr]  # never FAIL
    half = cpu_verdict(cpu_matmul(499.0, limit=3891.2 / 2, threads=8), "matmul", EPYC)  # a VM with half the CPUs
    assert half is not None and half.status == Status.PASS
    assert cpu_verdict(cpu_matmul(157.0), "matmul", "Intel(R) Xeon(R) Gold 6338") is None  # no entry for it


def test_a_cpu_figure_counts_as_judged_only_where_its_model_has_an_entry(epyc_in_table: Reference) -> None:
    figures = [cpu_matmul(990.0)]
    assert coverage_verdict(figures, "matmul", None, EPYC).numbers["not_judged"] == 0  # type: ignore[union-attr]
    assert coverage_verdict(figures, "matmul", None, "Some Other CPU").numbers["not_judged"] == 1  # type: ignore[union-attr]
    verdicts = list(expectation_verdicts(figures, "matmul", None, None, EPYC))
    assert [(v.check, v.status) for v in verdicts] == [
        ("cpu matmul fp32 512", Status.PASS),
        ("expectations", Status.PASS),
    ]


# -- training with no reference of its own: a roofline of the GPU's own matmul and copy figures --


def trained(value: float, tag: str = "c128 b8192 bf16", gpu: str = "NVIDIA H100 80GB HBM3") -> Measurement:
    params = {"bound": "compute", "gpu_uuid": "GPU-0"}
    conditions = {"gpu_name": gpu, "trust": "TRUSTED", "samples": 9}
    return Measurement("training", f"train {tag}", value, "samples/s", None, 50, "cuda:0", params, conditions)


def h100_run() -> list[Measurement]:
    copy_figure = Measurement(
        "bandwidth", "device copy 4 GiB", 2900.0, "GB/s", 0.01, 6, "cuda:0", {"bound": "memory"},
        {"gpu_name": "NVIDIA H100 80GB HBM3", "trust": "TRUSTED"},
    )  # fmt: skip
    return [matmul(700.0, "NVIDIA H100 80GB HBM3", "matmul bf16 8192"), copy_figure]


def test_a_training_figure_with_no_reference_is_judged_by_a_roofline_and_says_so() -> None:
    from rigcheck.engine.trust.expect_training import training_verdict

    expected = 124_581.63  # 28.73% (the H200's) of this H100's roofline 433,619.3: worked out in test_roofline_edges.py
    fine = training_verdict(trained(0.9 * expected), "training", h100_run())
    assert fine is not None and fine.status == Status.PASS and fine.numbers["basis"] == "roofline"
    assert "a roofline of its own matmul bf16 (700 TFLOP/s) and device copy (2,900 GB/s)" in fine.explanation
    assert "no reference for this model, network, batch and dtype" in fine.explanation
    slow = training_verdict(trained(0.27 * expected), "training", h100_run())  # no caching allocator: 3.6-4x slower
    assert slow is not None and slow.status == Status.WARN and "below half of it; likely cause:" in slow.explanation
    assert training_verdict(trained(0.501 * expected), "training", h100_run()).status == Status.PASS  # type: ignore[union-attr]
    assert training_verdict(trained(0.499 * expected), "training", h100_run()).status == Status.WARN  # type: ignore[union-attr]


def test_the_roofline_is_left_alone_where_it_does_not_apply() -> None:
    from rigcheck.engine.trust.expect_training import training_verdict

    assert training_verdict(trained(1.0, gpu=H200), "training", h100_run()) is None  # a reference of its own
    assert training_verdict(trained(1.0, "c128 b1024 bf16"), "training", h100_run()) is None  # launch-bound batch
    assert training_verdict(trained(1.0), "training", []) is None  # no matmul or copy figure in this run
    figures = [trained(1.0)]
    (count,) = [v for v in expectation_verdicts(figures, "training", None, None, "") if v.check == "expectations"]
    assert count.status == Status.NOT_JUDGED and count.numbers["not_judged"] == 1
    verdicts = list(expectation_verdicts(figures, "training", None, None, "", [*h100_run(), *figures]))
    assert [(v.check, v.status) for v in verdicts] == [
        ("roofline train c128 b8192 bf16", Status.WARN),
        ("expectations", Status.PASS),
    ]
