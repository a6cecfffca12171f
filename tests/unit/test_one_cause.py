"""One cause per figure: the one cause function, its order (someone else's load, the board held back, a setting
in force, the link, the clocks, nothing), each with a fault that fires it beside a clean case, and every verdict
of a run that speaks of a figure quoting the same cause. A disturbed figure never fails (nor passes) the GPU."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.settings import HostSettings, in_force
from rigcheck.engine.measure.references import reference_for
from rigcheck.engine.stages.matmul.verdicts import summary_verdicts
from rigcheck.engine.trust.cause import NOTHING, Expectation, likely_cause
from rigcheck.engine.trust.peers import peer_verdicts
from rigcheck.engine.trust.reference import reference_verdict, reference_verdicts
from rigcheck.engine.trust.settle import settle
from rigcheck.engine.trust.view import Conditions

H200 = "NVIDIA H200"
HOST = HostSettings(usable_cpus=16)
QUIET = {"samples": 12, "gpu_name": H200, "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
RIVAL = [{"pid": 825, "name": "python3", "gpu_memory": 874 * 2**20}]
RIVAL_REASON = "1 other process(es) on the GPU: python3 (pid 825, 874 MiB); next: `nvidia-smi` lists them"


def figure(value: float, name: str = "matmul bf16 4096", device: str = "cuda:0", **conditions: Any) -> Measurement:
    dtype = name.split()[1]
    params = {"dtype": dtype, "m": 4096, "library": "torch", "bound": "compute", "noisy": False}
    params |= {"share_of_peak": None, "peak": None, "spread_rel": 0.01, "broken": None}
    return Measurement("matmul", name, value, "TFLOP/s", 1.0, 20, device, params, QUIET | conditions)


def settings(**env: str) -> list[dict[str, Any]]:
    return [s.as_dict() for s in in_force(env, HOST)]


DISTURBED = {"trust": "SUSPECT", "other_gpu_processes": RIVAL, "trust_reasons": [RIVAL_REASON]}
DISTURBED["trust_outside"] = [RIVAL_REASON]


# -- the order, each rule with its fault and a clean case --


def test_nothing_in_the_conditions_is_nothing() -> None:
    found = likely_cause(figure(700.0))
    assert found.kind == "nothing" and found.text == NOTHING and found.judges_hardware


def test_a_broken_figure_is_its_own_cause() -> None:
    broken = replace(figure(9000.0), params=figure(1.0).params | {"broken": "impossible", "broken_next": "look"})
    assert (likely_cause(broken).text, likely_cause(broken).kind) == ("impossible", "broken")


def test_another_process_is_outside_only_where_it_disturbed_the_figure() -> None:
    found = likely_cause(figure(400.0, **DISTURBED))
    assert found.kind == "outside" and not found.judges_hardware
    assert "python3 (pid 825)" in found.text and found.next_step == "stop pid 825 and run again"
    # a process that only holds memory left the figure TRUSTED: it is no cause
    holder = figure(770.0, other_gpu_processes=RIVAL)
    assert likely_cause(holder).kind == "nothing"


def test_reasons_from_rules_that_do_not_say_are_outside_and_keep_their_own_next_step() -> None:
    unseen = "another process that rigcheck cannot see is using cuda:0: 874 MiB; next: stop it"
    found = likely_cause(figure(600.0, trust="SUSPECT", trust_reasons=[unseen], trust_outside=[unseen]))
    assert found.kind == "outside" and found.text.startswith("another process") and found.next_step == "stop it"
    # stored before trust_outside was kept: the words say it
    old = {"trust": "SUSPECT", "trust_reasons": ["other processes kept 15.0 of 16 CPUs busy"]}
    assert Conditions.from_dict(old).disturbed


def test_the_board_held_back_comes_before_a_setting_and_judges_the_hardware() -> None:
    hot = figure(500.0, throttle=["hardware thermal slowdown"], temperature_max_c=92.0)
    found = likely_cause(hot, settings=in_force({"CUDA_LAUNCH_BLOCKING": "1"}, HOST))
    assert found.kind == "held" and "thermal slowdown at 92 C" in found.text and found.judges_hardware


@pytest.mark.parametrize(("limit", "held"), [(685.0, True), (686.0, False), (700.0, False)])
def test_a_lowered_power_limit_edges(limit: float, held: bool) -> None:
    found = likely_cause(figure(600.0, power_limit_w=limit, power_default_limit_w=700.0))
    assert (found.kind == "held") is held


def test_a_setting_names_the_cause_ahead_of_the_software_stack() -> None:
    tf32 = figure(49.9, "matmul tf32 4096", settings=settings(NVIDIA_TF32_OVERRIDE="0"))
    found = likely_cause(tf32, Expectation(350.0, "the H200's tf32"))
    assert found.kind == "setting" and found.text.startswith("NVIDIA_TF32_OVERRIDE=0 is set")
    assert found.next_step.startswith("unset NVIDIA_TF32_OVERRIDE") and not found.judges_hardware
    clean = figure(349.0, "matmul tf32 4096")
    assert likely_cause(clean, Expectation(350.0, "x")).kind == "nothing"


def test_a_slowing_setting_is_no_cause_of_a_figure_above_its_expectation_and_a_raising_one_is() -> None:
    blocking = figure(800.0, settings=settings(CUDA_LAUNCH_BLOCKING="1"))
    assert likely_cause(blocking, Expectation(790.0, "x")).kind == "nothing"
    assert likely_cause(blocking, Expectation(801.0, "x")).kind == "nothing"  # at its rate: it changed nothing
    assert likely_cause(blocking, Expectation(1000.0, "x")).kind == "setting"  # off, the way it slows
    fast = figure(400.0, "matmul fp32 4096", settings=settings(NVIDIA_TF32_OVERRIDE="1"))
    assert likely_cause(fast, Expectation(51.0, "fp32")).kind == "setting"
    assert likely_cause(fast, Expectation(500.0, "fp32")).kind == "nothing"


@pytest.mark.parametrize(("ratio", "kind"), [(0.899, "clocks"), (0.9, "nothing")])
def test_a_low_clock_edges(ratio: float, kind: str) -> None:
    assert likely_cause(figure(600.0, clock_ratio=ratio, throttle=["power cap"])).kind == kind


def test_no_telemetry_says_so() -> None:
    bare = replace(figure(600.0), conditions={})
    assert likely_cause(bare).kind == "unjudged"


# -- every verdict on one figure quotes one cause --


def child_verdicts(figures: list[Measurement]) -> list[Verdict]:
    """The matmul child's best-of verdicts on these figures (without conditions, as the child sees them)."""
    bare = [replace(m, conditions={}) for m in figures]
    return list(summary_verdicts(bare, "cuda:0", H200))


def causes_in_a_run(figures: list[Measurement]) -> tuple[dict[str, set[str]], list[Verdict]]:
    """What a run says of each figure: the child's verdicts settled, the reference and peer verdicts."""
    settled = [settle(v, figures) for v in child_verdicts([m for m in figures if m.device == "cuda:0"])]
    everything = [*settled, *reference_verdicts(figures, "matmul"), *peer_verdicts(figures, "matmul")]
    said: dict[str, set[str]] = {}
    for verdict in everything:
        name = verdict.numbers.get("figure") or verdict.check.removeprefix("reference ").removeprefix("peers ")
        if "cause" in verdict.numbers:
            said.setdefault(f"{verdict.device} {name}", set()).add(verdict.numbers["cause"])
    return said, everything


SCENARIOS = {
    "launch blocking, fp8 (the issue's case)": {"settings": settings(CUDA_LAUNCH_BLOCKING="1")},
    "a rival process": DISTURBED,
    "thermal": {"throttle": ["software thermal slowdown"], "temperature_max_c": 90.0},
    "a low clock": {"clock_ratio": 0.7, "throttle": ["power cap"]},
    "nothing": {},
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_run_gives_two_causes_for_one_figure(scenario: str) -> None:
    conditions = SCENARIOS[scenario]
    slow = [figure(1079.0, "matmul fp8 4096", **conditions), figure(600.0, "matmul bf16 4096", **conditions)]
    peers = [figure(1450.0, "matmul fp8 4096", "cuda:1"), figure(790.0, "matmul bf16 4096", "cuda:1")]
    said, everything = causes_in_a_run([*slow, *peers])
    speakers = [v for v in everything if v.device == "cuda:0" and "cause" in v.numbers]
    kinds = {v.check.split()[0].split("-")[0] for v in speakers}
    assert kinds == {"best", "reference", "peers"}, [v.check for v in speakers]  # three verdicts on each figure
    for name, causes in said.items():
        assert len(causes) == 1, (name, causes)
    for verdict in everything:  # the words quote it too
        cause = verdict.numbers.get("cause")
        if cause:
            assert cause in verdict.explanation


def test_the_issues_fp8_case_one_cause_in_both_verdicts() -> None:
    fp8 = figure(1079.0, "matmul fp8 4096", settings=settings(CUDA_LAUNCH_BLOCKING="1"))
    (best,) = [settle(v, [fp8]) for v in child_verdicts([fp8])]
    (ref,) = [v for v in reference_verdicts([fp8], "matmul") if v.check == "reference matmul fp8 4096"]
    assert best.numbers["cause"] == ref.numbers["cause"]
    assert best.numbers["cause"].startswith("CUDA_LAUNCH_BLOCKING=1 is set")
    assert "software stack" not in best.explanation + ref.explanation


# -- a disturbed figure never fails the hardware --


def best_fp32(value: float, **conditions: Any) -> tuple[Measurement, Verdict]:
    m = figure(value, "matmul fp32 4096", **conditions)
    (verdict,) = child_verdicts([m])
    return m, verdict


def test_a_fail_on_a_disturbed_figure_is_inconclusive_naming_the_rival() -> None:
    m, verdict = best_fp32(25.0, **DISTURBED)
    assert verdict.status == Status.FAIL  # as the child says it, without conditions
    settled = settle(verdict, [m])
    assert settled.status == Status.INCONCLUSIVE and settled.numbers["would_be"] == "FAIL"
    assert "could not be judged: 1 other process(es) on the GPU: python3 (pid 825)" in settled.explanation
    assert "next: stop pid 825 and run again" in settled.explanation


def test_a_fail_on_a_clean_figure_stays_a_fail_with_its_cause() -> None:
    m, verdict = best_fp32(25.0, clock_ratio=0.6, throttle=["power cap"])
    settled = settle(verdict, [m])
    assert settled.status == Status.FAIL and "likely cause: SM clock at 60% of max (power cap)" in settled.explanation


def test_a_pass_on_a_disturbed_figure_stands_noting_the_disturbance_and_a_clean_pass_untouched() -> None:
    """Issue 43: someone else's load only lowers a figure; one that still meets its expectation is a PASS with the
    disturbance noted (INCONCLUSIVE on the old code), while one below it stays INCONCLUSIVE."""
    m, verdict = best_fp32(50.0, **DISTURBED)
    settled = settle(verdict, [m])
    assert verdict.status == Status.PASS and settled.status == Status.PASS
    assert "its figure: 1 other process(es) on the GPU" in settled.explanation
    low, verdict = best_fp32(25.0, **DISTURBED)
    assert settle(verdict, [low]).status == Status.INCONCLUSIVE
    clean, verdict = best_fp32(50.0)
    assert settle(verdict, [clean]) == verdict


def test_not_judged_stays_not_judged_saying_what_disturbed_its_figure() -> None:
    m = replace(figure(500.0, **DISTURBED), device="cpu", unit="GFLOP/s")
    (verdict,) = list(summary_verdicts([replace(m, conditions={})], "cpu"))
    settled = settle(verdict, [m])
    assert settled.status == Status.NOT_JUDGED and "its figure: 1 other process(es)" in settled.explanation


def test_a_verdict_naming_no_figure_or_an_unknown_one_is_left_alone() -> None:
    plain = Verdict("matmul", "noise", Status.WARN, "x", {"noisy": []}, device="cuda:0")
    assert settle(plain, [figure(1.0)]) == plain
    other = Verdict("matmul", "best-x", Status.FAIL, "x", {"figure": "matmul x 1"}, device="cuda:0")
    assert settle(other, [figure(1.0)]) == other


def test_the_reference_table_knows_the_h200_figures_these_tests_use() -> None:
    for key in ("best-fp32", "best-fp8", "best-bf16", "matmul fp8 4096", "matmul bf16 4096"):
        assert reference_for(H200, key) is not None, key


def test_a_figure_measured_again_is_judged_by_its_second_measurement_only() -> None:
    first = figure(25.0, "matmul bf16 4096", **DISTURBED)
    again = figure(780.0, "matmul bf16 4096 again")
    assert [v.status for v in reference_verdicts([first, again], "matmul")] == [Status.PASS]
    (alone,) = reference_verdicts([first], "matmul")
    assert alone.status == Status.INCONCLUSIVE


def test_a_figure_that_passes_with_a_setting_in_force_passes_without_naming_it() -> None:
    """Issue 41: a setting that changed no figure is not a figure's cause (named here on the old code)."""
    blocking = settings(CUDA_LAUNCH_BLOCKING="1")
    close = figure(760.0, "matmul bf16 4096", settings=blocking)  # within 15% of the reference, below it
    verdict = reference_verdict(close, reference_for(H200, close.name))
    assert verdict is not None and verdict.status == Status.PASS
    assert "CUDA_LAUNCH_BLOCKING=1 is set" not in verdict.explanation
    m, best = best_fp32(50.0, settings=blocking)
    settled = settle(best, [m])
    assert settled.status == Status.PASS and "CUDA_LAUNCH_BLOCKING=1 is set" not in settled.explanation
    low, best = best_fp32(40.0, settings=blocking)  # more than 15% below: the setting may be why
    assert settle(best, [low]).status == Status.INCONCLUSIVE


def test_a_memory_holder_is_not_named_where_cpu_load_disturbed_the_figure() -> None:
    busy = "other processes kept 15.0 of 16 CPUs busy while this figure needed 16: stress (pid 4242); next: stop them"
    m = figure(500.0, trust="SUSPECT", trust_reasons=[busy], trust_outside=[busy], other_gpu_processes=RIVAL)
    found = likely_cause(m)
    assert found.kind == "outside" and found.text.startswith("other processes kept 15.0") and "825" not in found.text
