"""A lone GPU against what its model achieves: the table, the 15%/50% rule, the cause and next step, and --baseline."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.events import Event, Measurement, StageFinished, Status, Verdict
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.measure.references import MODELS, REFERENCES, model_of, reference_for
from rigcheck.engine.report.baseline import to_baseline
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.stages.matmul.stage import summary_verdicts
from rigcheck.engine.trust.reference import cause_and_next, reference_verdict, reference_verdicts
from stage_infos import fake

H200 = "NVIDIA H200"
CAPPED = {"clock_ratio": 0.7, "throttle": ["power cap"], "power_mean_w": 695.0, "power_limit_w": 700.0, "samples": 9}


def figure(value: float, name: str = "matmul bf16 8192", unit: str = "TFLOP/s", **conditions: Any) -> Measurement:
    c = {"gpu_name": H200, "trust": "TRUSTED", "samples": 9} | conditions
    return Measurement("matmul", name, value, unit, 1.0, 20, "cuda:0", {"bound": "compute", "timer": "events"}, c)


def sweep_best(value: float, dtype: str = "bf16") -> Measurement:
    """A sweep figure as the matmul child has it when it writes its best-of verdicts."""
    params = {"dtype": dtype, "library": "torch", "m": 8192, "share_of_peak": value / 989.4, "peak": 989.4}
    params |= {"noisy": False, "launch_bound": False, "broken": None}
    return Measurement("matmul", f"matmul {dtype} 8192", value, "TFLOP/s", 1.0, 20, "cuda:0", params)


def best_verdict(value: float, device_name: str | None = H200, baseline: dict | None = None) -> Verdict:
    (verdict,) = summary_verdicts([sweep_best(value)], "cuda:0", device_name, baseline)
    return verdict


# -- the table --


@pytest.mark.parametrize(
    ("name", "sms", "arch", "model"),
    [
        ("NVIDIA H200", 132, None, "H200"),
        ("NVIDIA GH200 480GB", 132, None, "GH200"),
        ("NVIDIA H200 NVL", 132, None, None),
        ("NVIDIA H100 80GB HBM3", 132, None, "H100 SXM"),
        ("NVIDIA H100 80GB HBM3", 114, None, None),
        ("NVIDIA H100 PCIe", 114, None, None),
        ("NVIDIA A100-SXM4-80GB", 108, None, "A100 SXM"),
        ("NVIDIA A100-PCIE-40GB", 108, None, "A100 PCIe"),
        ("NVIDIA B200", 148, None, "B200"),
        ("NVIDIA GB200", 152, None, "GB200"),
        ("AMD Instinct MI300X", 304, "gfx942:sramecc+:xnack-", "MI300X"),
        ("AMD Radeon Graphics", 40, "gfx1151", "Radeon 8060S (Strix Halo)"),
        ("Tesla T4", 40, None, "T4"),
        ("Tesla P40", 30, None, "Tesla P40"),
        ("CPU", None, None, None),
    ],
)
def test_a_device_is_matched_to_its_model_by_name_and_where_needed_sm_count(
    name: str, sms: int | None, arch: str | None, model: str | None
) -> None:
    found = model_of(name, sms, arch)
    assert (found.key if found else None) == model


def test_the_published_mamf_figures_and_every_entry_with_a_source() -> None:
    assert reference_for(H200, "best-bf16").value == 794.5  # type: ignore[union-attr]
    assert reference_for(H200, "best-bf16").kind == "published MAMF"  # type: ignore[union-attr]
    assert reference_for(H200, "max-find bf16").value == 794.5  # type: ignore[union-attr]
    assert reference_for(H200, "best-fp8").value == 1453.4  # type: ignore[union-attr]
    assert reference_for("NVIDIA H100 80GB HBM3", "best-fp8", sms=132).value == 1402.6  # type: ignore[union-attr]
    assert reference_for("NVIDIA A100-SXM4-80GB", "best-bf16").value == 271.2  # type: ignore[union-attr]
    assert reference_for("NVIDIA B200", "best-fp8").value == 3432.5  # type: ignore[union-attr]
    assert reference_for("AMD Instinct MI355X", "best-bf16").value == 1565.0  # type: ignore[union-attr]
    assert reference_for(H200, "train c128 b8192 bf16").value == 165_793.9  # type: ignore[union-attr]
    assert reference_for(H200, "host to device pageable 1 GiB") is None  # pageable copies are not judged
    keys = [(r.model, r.figure) for r in REFERENCES]
    assert len(keys) == len(set(keys))
    assert {r.model for r in REFERENCES} <= {m.key for m in MODELS}
    assert all(r.value > 0 and len(r.source) > 20 and r.unit for r in REFERENCES)


# -- the best-of verdicts in the matmul child --


def test_a_lone_h200_at_790_passes_citing_the_published_mamf() -> None:
    verdict = best_verdict(790.0)
    assert verdict.status == Status.PASS
    assert "99% of the H200's published MAMF 794.5" in verdict.explanation
    assert verdict.numbers["reference"] == 794.5 and verdict.numbers["model"] == H200


def test_a_lone_h200_at_600_warns_naming_the_reference_and_the_figure_the_parent_settles() -> None:
    verdict = best_verdict(600.0)
    assert verdict.status == Status.WARN
    assert "76% of the H200's published MAMF 794.5" in verdict.explanation
    assert verdict.explanation.endswith("more than 15% below the reference")  # the child words no cause
    assert verdict.numbers["figure"] == "matmul bf16 8192" and "likely cause" not in verdict.explanation


def test_a_lone_h200_at_300_fails() -> None:
    verdict = best_verdict(300.0)
    assert verdict.status == Status.FAIL and "below half of the reference" in verdict.explanation


def test_an_unknown_model_is_not_judged_and_says_so() -> None:
    verdict = best_verdict(3.0, "NVIDIA GeForce GT 1030")
    assert verdict.status == Status.NOT_JUDGED  # never a PASS: there is nothing to pass it against
    assert "not judged: no reference figure for NVIDIA GeForce GT 1030" in verdict.explanation
    cpu = best_verdict(3.0, None)  # a CPU: no datasheet reference for one
    assert cpu.status == Status.NOT_JUDGED and "a CPU has no datasheet reference" in cpu.explanation


def test_a_cpu_best_on_a_model_the_table_keeps_points_at_the_verdict_that_judges_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rigcheck.engine.facts import cpu_reference
    from rigcheck.engine.stages.matmul import verdicts

    figure = Measurement("matmul", "matmul fp32 1024", 900.0, "GFLOP/s", 1.0, 20, "cpu", sweep_best(0.9, "fp32").params)
    judged = "judged against this CPU model's own reference in `cpu matmul fp32 1024`"
    unjudged = "a CPU has no datasheet reference (compared only against history)"
    for cpu, capability, said in (
        ("Intel(R) Xeon(R) Processor", "Intel AVX-512", judged),
        # issue 40: the same brand string on a 2-core VM with AVX2 units is another CPU: the H200 host's share
        # of its limit says nothing of it
        ("Intel(R) Xeon(R) Processor", "Intel AVX2+FMA", unjudged),
        ("AMD EPYC 9654 96-Core Processor", "AMD AVX-512", unjudged),
        ("Intel(R) Xeon(R) Platinum 8480+", "Intel AVX-512", judged),  # by what it can do, not by its name
    ):
        monkeypatch.setattr(verdicts, "this_cpu", lambda c=cpu: c)
        monkeypatch.setattr(cpu_reference, "this_capability", lambda c=capability: c)
        (verdict,) = summary_verdicts([figure], "cpu", None, None)
        assert verdict.status == Status.NOT_JUDGED and said in verdict.explanation, (cpu, capability)


def test_max_find_uses_the_same_reference() -> None:
    reference = reference_for(H200, "max-find bf16")
    assert reference is not None and reference.cite() == "the H200's published MAMF 794.5 (ml-engineering)"


# -- the parent's verdict on each figure --


def test_the_rule_for_one_figure_and_its_reference() -> None:
    reference = reference_for(H200, "matmul bf16 8192")
    assert reference is not None and reference.value == 779.4
    ok = reference_verdict(figure(750.0), reference)
    assert ok is not None and ok.status == Status.PASS
    slow = reference_verdict(figure(600.0, **CAPPED), reference)
    assert slow is not None and slow.status == Status.WARN
    text = slow.explanation
    assert "77% of the H200's rigcheck-measured 779.4 (3 runs, 2026-12-03)" in text
    assert "likely cause: SM clock at 70% of max (power cap)" in text and "next: `nvidia-smi -q -d" in text
    assert "\n" not in text
    half = reference_verdict(figure(300.0), reference)
    assert half is not None and half.status == Status.FAIL
    assert reference_verdict(figure(300.0), None) is None  # no reference: no judgement


def test_a_disturbed_figure_below_half_is_inconclusive_naming_what_disturbed_it() -> None:
    rival = [{"pid": 2788, "name": "python3", "gpu_memory": 2**30}]
    m = figure(300.0, trust="SUSPECT", other_gpu_processes=rival, trust_reasons=["1 other process(es) on the GPU"])
    verdict = reference_verdict(m, reference_for(H200, m.name))
    assert verdict is not None and verdict.status == Status.INCONCLUSIVE  # never a FAIL for someone else's load
    assert "could not be judged: 1 other process(es) on the GPU: python3 (pid 2788)" in verdict.explanation
    assert "next: stop pid 2788" in verdict.explanation


@pytest.mark.parametrize(
    ("conditions", "params", "cause", "step"),
    [
        (
            {"throttle": ["software thermal slowdown"], "temperature_max_c": 91.0},
            {},
            "thermal slowdown at 91 C",
            "TEMPERATURE",
        ),
        (
            {"power_limit_w": 450.0, "power_default_limit_w": 700.0},
            {},
            "power limit lowered to 450",
            "nvidia-smi -pl 700",
        ),
        (
            {"pcie": {"gen": 3, "max_gen": 5, "width": 8, "max_width": 16}},
            {"bound": "link"},
            "PCIe at Gen3 x8 of Gen5 x16",
            "reseat or check the riser: PCIe at Gen3 x8 of Gen5 x16",
        ),
        ({"gpu_pci_bus_id": "0000:1b:00.0"}, {"bound": "link"}, "the host link", "lspci -vv -s 0000:1b:00.0"),
        ({"samples": 9}, {}, "nothing in its conditions", "rigcheck run probe"),
        ({}, {}, "no telemetry covers it", "telemetry on"),
    ],
)
def test_the_cause_and_next_step_come_from_the_figures_own_conditions(
    conditions: dict, params: dict, cause: str, step: str
) -> None:
    m = Measurement("bandwidth", "x", 1.0, "GB/s", device="cuda:0", params=params, conditions=conditions)
    found_cause, found_step = cause_and_next(m)
    assert cause in found_cause and step in found_step


def test_a_slow_pinned_copy_on_a_narrow_link_names_the_link() -> None:
    link = {"pcie": {"gen": 3, "max_gen": 5, "width": 8, "max_width": 16}}
    m = replace(figure(40.0, "host to device pinned 1 GiB", "GB/s", **link), params={"bound": "link", "pinned": True})
    (verdict,) = reference_verdicts([m], "bandwidth")
    assert (
        verdict.status == Status.WARN
        and "72% of the H200's rigcheck-measured 55.39 (3 runs, 2026-12-03)" in verdict.explanation
    )
    assert "reseat or check the riser: PCIe at Gen3 x8 of Gen5 x16" in verdict.explanation


def test_reference_verdicts_say_what_was_compared_and_skip_what_has_no_reference() -> None:
    figures = [figure(760.0), figure(770.0, "matmul bf16 4096"), figure(5.0, "matmul bf16 1024")]
    figures.append(replace(figure(1.0), conditions={"gpu_name": "NVIDIA GeForce GT 1030"}))
    figures.append(replace(figure(1.0), device="cpu"))
    (summary,) = reference_verdicts(figures, "matmul")
    assert summary.status == Status.PASS and summary.numbers["compared"] == 2 and "H200" in summary.explanation
    assert list(reference_verdicts([figures[-1]], "matmul")) == []


# -- the baseline --


def baseline_text(figures: dict[str, float], **extra: Any) -> str:
    entries = {key: {"value": value, "unit": "TFLOP/s", "source": "known-good box"} for key, value in figures.items()}
    return json.dumps({"format": "rigcheck-baseline", "version": 1, "source": "test", "figures": entries} | extra)


def test_a_baseline_overrides_the_table_for_the_figures_it_names() -> None:
    baseline = parse_baseline(baseline_text({f"{H200}/best-bf16": 980.0, f"{H200}/matmul bf16 8192": 980.0}))
    warned = best_verdict(790.0, baseline=baseline)  # 99% of the table's MAMF, 79% of the baseline's
    assert warned.status == Status.WARN and "the baseline's 980 for NVIDIA H200" in warned.explanation
    (slow,) = reference_verdicts([figure(790.0)], "matmul", baseline)
    assert slow.status == Status.WARN and slow.numbers["kind"] == "baseline"
    (table,) = reference_verdicts([figure(770.0, "matmul bf16 4096")], "matmul", baseline)  # not in the baseline
    assert table.status == Status.PASS and "their model's" in table.explanation
    other = parse_baseline(baseline_text({"NVIDIA H100 80GB HBM3/best-bf16": 700.0}))
    assert best_verdict(790.0, baseline=other).numbers["reference"] == 794.5  # another model's: the table


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{not json", "not JSON"),
        ('{"figures": {}}', "not a rigcheck baseline"),
        (json.dumps({"format": "rigcheck-baseline", "version": 9, "figures": {"a/b": {"value": 1}}}), "version 9"),
        (baseline_text({}), 'no "figures"'),
        (baseline_text({"no slash": 1.0}), "no slash"),
        (baseline_text({f"{H200}/best-bf16": -3.0}), "positive number"),
        (baseline_text({f"{H200}/best-bf16": float("nan")}), "positive number"),
    ],
)
def test_a_malformed_baseline_is_one_sentence(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        parse_baseline(text)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_export_as_a_baseline_round_trips_into_a_baseline() -> None:
    def row(name: str, value: float, device: str, trust: str = "TRUSTED", **params: Any) -> dict[str, Any]:
        conditions = {"gpu_name": H200, "trust": trust}
        return {
            "name": name,
            "value": value,
            "unit": "TFLOP/s",
            "device": device,
            "params": params,
            "conditions": conditions,
            "host": "",
        }

    report = {
        "run": {"id": 7, "host": "gpu-07", "started": 1764547200.0, "profile": "standard"},
        "measurements": [
            row("matmul bf16 8192", 780.0, "cuda:0"),
            row("matmul bf16 8192", 790.0, "cuda:1"),
            row("matmul bf16 8192", 800.0, "cuda:2"),
            row("matmul bf16 4096", 100.0, "cuda:0", trust="SUSPECT"),  # disturbed: left out
            row("matmul bf16 1024", 300.0, "cuda:0", launch_bound=True),  # launch-bound: left out
            row("matmul fp32 512", 2.0, "cpu"),  # the CPU: left out
        ],
        "verdicts": [
            {
                "check_name": "best-bf16",
                "device": "cuda:0",
                "numbers": {"value": 790.0, "unit": "TFLOP/s", "model": H200},
            },
            {"check_name": "max-find", "device": "cuda:0", "numbers": {"mean": 788.5, "best": 821.7, "model": H200}},
            {"check_name": "best-fp32", "device": "cpu", "numbers": {"value": 2.0}},
        ],
    }
    baseline = parse_baseline(to_baseline(report))
    assert sorted(baseline["figures"]) == [f"{H200}/best-bf16", f"{H200}/matmul bf16 8192", f"{H200}/max-find bf16"]
    median = baseline["figures"][f"{H200}/matmul bf16 8192"]
    assert median["value"] == 790.0 and "median of 3" in median["source"] and "run 7 on gpu-07" in median["source"]
    found = reference_for(H200, "max-find bf16", baseline)
    assert found is not None and found.value == 788.5 and found.kind == "baseline"
    with pytest.raises(ValueError, match="no figure to make a baseline of"):
        to_baseline(report | {"measurements": report["measurements"][-1:], "verdicts": []})


# -- the runner: a lone GPU is judged after its stage --


def run_lone(tmp_path: Path, **options: object) -> list[Event]:
    info = replace(fake("matmul", "lone_h200"), per_device=True)
    events: list[Event] = []
    plan = RunPlan(1, RunRequest((info,), "cuda:0", "quick", options=dict(options)), tmp_path)
    run = Run(plan, [events.append])
    run.start()
    assert run.wait(60)
    return events


def test_a_lone_gpu_is_judged_against_its_model_after_the_stage(tmp_path: Path) -> None:
    events = run_lone(tmp_path, value=300.0, conditions=CAPPED)
    (verdict,) = [e for e in events if isinstance(e, Verdict) and e.check.startswith("reference")]
    assert verdict.status == Status.FAIL and verdict.check == "reference matmul bf16 4096"
    assert (
        "of the H200's rigcheck-measured 792.1 (3 runs, 2026-12-03)" in verdict.explanation
        and "SM clock at 70%" in verdict.explanation
    )
    assert [e.status for e in events if isinstance(e, StageFinished)] == [Status.FAIL]
    fine = run_lone(tmp_path / "fine", value=780.0)
    assert [(e.check, e.status) for e in fine if isinstance(e, Verdict) and e.check.startswith("reference")] == [
        ("reference", Status.PASS)
    ]
    baseline = parse_baseline(baseline_text({f"{H200}/matmul bf16 4096": 980.0}))
    judged = run_lone(tmp_path / "baseline", value=780.0, baseline=baseline)
    (warned,) = [e for e in judged if isinstance(e, Verdict) and e.check.startswith("reference")]
    assert warned.status == Status.WARN and "the baseline's 980" in warned.explanation


def test_max_find_cites_the_reference_and_a_baseline_replaces_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from rigcheck.engine.measure.stats import TimingStats
    from rigcheck.engine.stage import StageContext, StageSpec
    from rigcheck.engine.stages.matmul import search

    def burst(dtype: str, shape: tuple[int, int, int], device: Any, groups: int) -> tuple[list[float], TimingStats]:
        m, n, k = shape
        rate = 600.0 if m == 2048 else 500.0
        seconds = 2.0 * m * n * k / rate / 1e12
        return [rate] * groups, TimingStats((seconds,) * groups, (seconds,) * groups)

    monkeypatch.setattr(search, "burst", burst)
    monkeypatch.setattr(search.time, "sleep", lambda s: None)
    monkeypatch.setattr(search.torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(search.torch.cuda, "get_device_name", lambda d: H200)
    monkeypatch.setattr(
        search.torch.cuda, "get_device_properties", lambda d: type("P", (), {"multi_processor_count": 132})
    )
    monkeypatch.setattr(search, "gpu_matmul_limit", lambda d, dtype: None)
    monkeypatch.setattr(search, "device_identity", lambda d: {})

    def verdict(*options: tuple[str, object]) -> Verdict:
        context = StageContext(StageSpec("matmul", "cuda:0", "quick", options))
        last = list(search.max_find(context, torch.device("cuda:0"), 60.0))[-1]
        assert isinstance(last, Verdict) and last.check == "max-find"
        return last

    slow = verdict()
    assert slow.status == Status.WARN and "600 TFLOP/s mean, 76% of the H200's published MAMF 794.5" in slow.explanation
    assert slow.explanation.endswith("more than 15% below the reference") and slow.numbers["figure"]
    baseline = parse_baseline(baseline_text({f"{H200}/max-find bf16": 590.0}))
    ours = verdict(("baseline", baseline))
    assert ours.status == Status.PASS and "102% of the baseline's 590 for NVIDIA H200" in ours.explanation


def test_noisy_figures_are_noted_by_name_but_launch_bound_and_broken_ones_are_not() -> None:
    """Issue 41: noise alone does not make the stage WARN (it did on the old code): a note, each figure NOISY."""
    steady = sweep_best(900.0)
    noisy = replace(steady, name="matmul bf16 4096", params=steady.params | {"m": 4096, "noisy": True})
    launch = replace(noisy, name="matmul bf16 256", params=noisy.params | {"m": 256, "launch_bound": True})
    broken = replace(noisy, name="matmul bf16 512", params=noisy.params | {"m": 512, "broken": "wrong elements"})
    clean = {v.check: v for v in summary_verdicts([steady, launch, broken], "cpu")}
    assert set(clean) == {"best-bf16"}
    found = {v.check: v for v in summary_verdicts([steady, noisy, launch, broken], "cpu")}
    assert found["noise"].status == Status.PASS and found["noise"].numbers["note"]
    assert found["noise"].numbers["noisy"] == ["matmul bf16 4096"]
    assert found["noise"].explanation.startswith(
        "note: 1 figure(s) were noisy (interquartile spread over 5% of the median) and stayed so when measured again"
    )


@pytest.mark.parametrize(
    ("dtype", "value", "status"),
    [
        ("fp32", 51.0, Status.PASS),
        ("tf32", 400.0, Status.PASS),
        ("fp16", 760.0, Status.PASS),
        ("fp16", 600.0, Status.WARN),
    ],
)
def test_an_h100_s_best_of_is_judged_against_its_architecture_where_its_model_has_no_entry(
    dtype: str, value: float, status: Status
) -> None:
    """Issue 40: on an H100 SXM, best fp32, tf32 and fp16 were NOT JUDGED beside '78% of the datasheet'; the
    figure's device facts now carry the H200's measured share to it."""
    best = sweep_best(value, dtype)
    best.params.update(
        gpu_name="NVIDIA H100 80GB HBM3", gpu_arch="sm_90", gpu_units=132, sm_clock_max_mhz=1980,
        mem_clock_max_mhz=2619, memory_bus_bits=5120,
    )  # fmt: skip
    (verdict,) = summary_verdicts([best], "cuda:0", "NVIDIA H100 80GB HBM3", None, 132, "sm_90")
    assert verdict.status == status, verdict.explanation
    assert "expected (Hopper share of its datasheet peak (H200 rigcheck-measured, 3 runs" in verdict.explanation
    if status == Status.WARN:
        assert "more than 15% below the reference" in verdict.explanation
