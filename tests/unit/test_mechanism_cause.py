"""The cause by its mechanism (issue 41, items 1-2): a CPU figure's cause is the thread count it ran with where
that is below the CPUs it may use, named by what set it (a variable, a sitecustomize, else "something in this
interpreter"); a GPU matrix multiply's math mode is read from its rate against fp32's peak, not from the
variables present; a setting that changed no figure is no figure's cause."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.facts.settings import HostSettings, in_force
from rigcheck.engine.stages.common import mechanism as child_side
from rigcheck.engine.trust import mechanism
from rigcheck.engine.trust.cause import Expectation, likely_cause
from rigcheck.engine.trust.expect_cpu import cpu_verdict

QUIET = {"samples": 12, "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
NOISY = {"samples": 12, "trust": "NOISY", "trust_reasons": ["timing spread 7% of the median"], "trust_outside": []}
SITE = "torch.set_num_threads(1) in /opt/env/lib/python3.11/site-packages/sitecustomize.py line 2"
HOST = HostSettings(usable_cpus=16, physical_cpus=16)


def cpu_figure(value: float, threads: int, ceiling: int = 16, set_by: tuple[str, ...] = (), **conditions: Any):
    mech = {"threads": threads, "pool": "torch", "ceiling": ceiling, "usable_cpus": 16, "set_by": list(set_by)}
    params = {"dtype": "fp32", "library": "torch", "bound": "host", "threads": threads, "mechanism": mech}
    params |= {"limit": 3891.2, "limit_basis": "16 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle", "broken": None}
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 0.07, 10, "cpu", params, QUIET | conditions)


def gpu_figure(value: float, dtype: str, variables: dict[str, str], settings: list[dict[str, Any]] | None = None):
    mode = {"allow_tf32": dtype == "tf32", "float32_matmul_precision": "highest", "fp32_peak": 66.9}
    mode["variables"] = variables
    params = {"dtype": dtype, "m": 4096, "library": "torch", "bound": "compute", "math_mode": mode, "broken": None}
    conditions = QUIET | {"gpu_name": "NVIDIA H100 80GB HBM3", "clock_ratio": 0.99}
    conditions |= {"settings": settings} if settings else {}
    return Measurement("matmul", f"matmul {dtype} 4096", value, "TFLOP/s", 0.5, 20, "cuda:0", params, conditions)


# -- the thread count --


def test_a_thread_limit_from_a_sitecustomize_is_the_cause_not_the_spread() -> None:
    """Failed on the old code: the figure knew it ran on 1 thread and blamed "timing spread 7% of the median"."""
    found = likely_cause(cpu_figure(146.0, 1, set_by=(SITE,), **NOISY), Expectation(911.9, "x", "cpu"))
    assert found.kind == "setting" and "the thread count: it ran on 1 thread(s) of torch" in found.text
    assert "sitecustomize.py line 2" in found.text and "sitecustomize.py line 2" in found.next_step
    assert "timing spread" not in found.text


def test_a_thread_limit_with_no_setter_found_says_the_interpreter_set_it() -> None:
    found = likely_cause(cpu_figure(146.0, 1), Expectation(911.9, "x", "cpu"))
    assert "something in this interpreter set torch's threads to 1" in found.text


def test_a_thread_variable_is_named_with_its_value() -> None:
    found = likely_cause(cpu_figure(150.0, 1, set_by=("OPENBLAS_NUM_THREADS=1",)), Expectation(762.0, "x"))
    assert "OPENBLAS_NUM_THREADS=1 set them" in found.text and found.next_step.startswith("unset OPENBLAS_NUM")


@pytest.mark.parametrize(("threads", "named"), [(15, True), (16, False)])
def test_the_thread_count_edge(threads: int, named: bool) -> None:
    found = likely_cause(cpu_figure(146.0, threads), Expectation(911.9, "x"))
    assert ("the thread count" in found.text) == named


def test_a_thread_limit_that_did_not_lower_the_figure_is_not_its_cause() -> None:
    found = likely_cause(cpu_figure(900.0, 1, set_by=(SITE,)), Expectation(911.9, "x"))
    assert found.kind == "nothing"


def test_the_cpu_verdict_names_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.trust import expect_cpu

    reference = SimpleNamespace(
        value=998.0, peak=3891.2, warn_below=0.6, model="EPYC", source="s", short="s", unit="GFLOP/s", figure="m"
    )
    monkeypatch.setattr(expect_cpu, "cpu_reference", lambda m, name: reference)
    slow = cpu_verdict(cpu_figure(146.0, 1, set_by=(SITE,), **NOISY), "matmul", "EPYC")
    assert slow is not None and slow.status == Status.INCONCLUSIVE
    assert "the thread count" in slow.explanation and "timing spread" not in slow.explanation
    clean = cpu_verdict(cpu_figure(990.0, 16), "matmul", "EPYC")
    assert clean is not None and clean.status == Status.PASS and "thread" not in clean.explanation


# -- the child's reading --


def test_the_child_finds_the_call_in_a_sitecustomize(tmp_path: Path) -> None:
    site = tmp_path / "sitecustomize.py"
    site.write_text("import torch\ntorch.set_num_threads(1)\n# torch.set_num_threads(2) left out\n")
    found = child_side.start_up_setters({"sitecustomize": SimpleNamespace(__file__=str(site))})
    assert found == [f"torch.set_num_threads(1) in {site} line 2"]
    clean = tmp_path / "usercustomize.py"
    clean.write_text("import os\n")
    assert child_side.start_up_setters({"usercustomize": SimpleNamespace(__file__=str(clean))}) == []


def test_the_child_reads_the_threads_torch_ran_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    found = child_side.cpu_threads("torch", 1)
    assert found["threads"] == 1 and found["pool"] == "torch" and "OMP_NUM_THREADS=1" in found["set_by"]
    assert found["ceiling"] >= 1 and found["usable_cpus"] >= 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert "OMP_NUM_THREADS=1" not in child_side.cpu_threads("torch", torch.get_num_threads())["set_by"]


def test_physical_cores_from_thread_siblings(tmp_path: Path) -> None:
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings)
    assert child_side.cores_of(frozenset(range(4)), tmp_path) == 2
    assert child_side.cores_of(frozenset({5}), tmp_path) is None


# -- the math mode, read from the rate --


def test_tf32_at_the_fp32_rate_names_the_override() -> None:
    found = likely_cause(gpu_figure(49.9, "tf32", {"NVIDIA_TF32_OVERRIDE": "0"}), Expectation(350.0, "x"))
    assert (
        found.kind == "setting" and "tf32 ran at the fp32 rate" in found.text and "NVIDIA_TF32_OVERRIDE=0" in found.text
    )
    assert likely_cause(gpu_figure(349.0, "tf32", {}), Expectation(350.0, "x")).kind == "nothing"


def test_a_tf32_override_with_fp32_at_its_normal_rate_is_not_named() -> None:
    """Failed on the old code: TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 was named although fp32 ran at 51.9 TFLOP/s."""
    env = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}
    settings = [s.as_dict() for s in in_force(env, HOST)]
    normal = likely_cause(gpu_figure(51.9, "fp32", env, settings), Expectation(51.0, "fp32"))
    assert normal.kind == "nothing" and "TORCH_ALLOW_TF32" not in normal.text
    fast = likely_cause(gpu_figure(400.0, "fp32", env, settings), Expectation(51.0, "fp32"))
    assert (
        fast.kind == "setting" and "fp32 ran as TF32" in fast.text and "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1" in fast.text
    )


@pytest.mark.parametrize(
    ("value", "slows", "is_off"), [(0.899, True, True), (0.9, True, False), (1.101, False, True), (1.1, False, False)]
)
def test_off_its_expectation_edges(value: float, slows: bool, is_off: bool) -> None:
    assert mechanism.off(value, 1.0, slows) == is_off
    assert not mechanism.off(value, None, slows)


def test_a_blas_limit_in_a_sitecustomize_is_numpys_not_torchs(tmp_path: Path) -> None:
    site = tmp_path / "sitecustomize.py"
    site.write_text("from threadpoolctl import threadpool_limits\nthreadpool_limits(1)\n")
    modules = {"sitecustomize": SimpleNamespace(__file__=str(site))}
    assert child_side.start_up_setters(modules) == []
    assert child_side.start_up_setters(modules, child_side.BLAS_SETTER) == [f"threadpool_limits(1) in {site} line 2"]
