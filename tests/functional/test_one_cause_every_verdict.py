"""Through the real runner and real stage children on three fake H100s: every verdict kind that speaks of a figure
(the child's best-of settled in the parent, the model reference, the host link, the CPU's share, the training
roofline, history and peers) quotes one cause for it, whatever the figure's conditions; and where that cause is
someone else's load or a setting in force, none of them is a WARN or FAIL."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.settings import HostSettings, in_force
from rigcheck.engine.measure.references import Model, Reference
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.trust.history import Past

H100 = "NVIDIA H100 80GB HBM3"
EPYC = "AMD EPYC 9454 48-Core Processor"
GPUS = ("cuda:0", "cuda:1", "cuda:2")
SLOW = 0.3  # cuda:0's subject figures against peers, references and history: below every kind's warn line

STAGE_PY = '''
"""Each GPU's figures as the matmul, bandwidth and training children report them; cuda:0's subjects slow, with
the matmul child's best-of verdict (the rule only, its figure named)."""

from rigcheck.engine.events import Measurement, Status, Verdict

NORMAL = {NORMAL!r}
SUBJECTS = {SUBJECTS!r}
SLOW = {SLOW!r}
PCIE = {{"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}}


def figures(context):
    device = context.spec.device
    index = int(device[5:])
    for name, (value, unit, bound) in NORMAL.items():
        on = "cpu" if unit == "GFLOP/s" else device
        if on == "cpu" and index:
            continue
        scale = SLOW if index == 0 and name in SUBJECTS else 1.0 + 0.002 * index
        params = {{"bound": bound, "timer": "events", "gpu_uuid": f"GPU-{{index}}", "broken": None}}
        if bound == "link":
            bus = f"0000:{{index + 24:02x}}:00.0"
            params |= {{"pinned": True, "direction": "h2d", "pcie": PCIE, "pci_bus_id": bus}}
        if on == "cpu":
            params = {{"bound": "host", "limit": 3891.2, "limit_basis": "16 CPUs", "threads": 16}}
        yield Measurement(context.spec.stage, name, value * scale, unit, 0.01, 10, on, params)
    best = NORMAL["matmul bf16 8192"][0] * (SLOW if index == 0 else 1.0)
    numbers = {{"figure": "matmul bf16 8192", "reference": 794.5, "reference_cited": "the H100's published MAMF"}}
    status = Status.FAIL if best < 0.5 * 794.5 else Status.PASS
    yield Verdict(context.spec.stage, "best-bf16", status, f"best bf16: {{best:.4g}}", numbers, device=device)
'''

NORMAL: dict[str, tuple[float, str, str]] = {
    "matmul bf16 8192": (700.0, "TFLOP/s", "compute"),  # no H100 reference at this size: best-of, peers, history
    "matmul bf16 2048": (690.0, "TFLOP/s", "compute"),  # the roofline's input, left clean
    "device copy 4 GiB": (2650.0, "GB/s", "memory"),  # the H100's DCGM reference
    "device copy 1 GiB": (2640.0, "GB/s", "memory"),  # the roofline's input, left clean
    "host to device pinned 1 GiB": (55.0, "GB/s", "link"),  # against its Gen5 x16 link
    "train c128 b8192 bf16": (150_000.0, "samples/s", "compute"),  # no H100 reference: the roofline
    "matmul fp32 512": (998.0, "GFLOP/s", "host"),  # the CPU's share of its limit
}
SUBJECTS = ("matmul bf16 8192", "device copy 4 GiB", "host to device pinned 1 GiB", "train c128 b8192 bf16",
            "matmul fp32 512")  # fmt: skip

RIVAL = "1 other process(es) on the GPU: python3 (pid 825)"
CPU_RIVAL = "other processes kept 15.0 of 16 CPUs busy while this figure needed 16: stress (pid 4242)"


def settings(**env: str) -> list[dict[str, Any]]:
    return [s.as_dict() for s in in_force(env, HostSettings(usable_cpus=16))]


SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[Status, ...]]] = {
    # name: (a GPU subject's conditions, the CPU subject's, the statuses no verdict on a subject may have)
    "another process": (
        {"trust": "SUSPECT", "trust_reasons": [RIVAL], "trust_outside": [RIVAL],
         "other_gpu_processes": [{"pid": 825, "name": "python3", "gpu_memory": None}]},
        {"trust": "SUSPECT", "trust_reasons": [CPU_RIVAL], "trust_outside": [CPU_RIVAL]},
        (Status.WARN, Status.FAIL),  # someone else's load never fails the hardware; a figure meeting it passes
    ),
    "a setting in force": (
        {"settings": settings(CUDA_LAUNCH_BLOCKING="1", PYTORCH_NO_CUDA_MEMORY_CACHING="1")},
        {"settings": settings(OMP_NUM_THREADS="1")},
        (Status.WARN, Status.FAIL),  # a figure that still meets its expectation passes, naming the setting
    ),
    "thermal": ({"throttle": ["hardware thermal slowdown"], "temperature_max_c": 92.0}, {}, ()),
    "nothing": ({}, {}, ()),
}  # fmt: skip
KINDS = {"best", "reference", "link", "cpu", "roofline", "history", "peers"}


@pytest.fixture
def epyc_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host's CPU is an EPYC 9454 with an entry in the table (998 GFLOP/s of 3,891, rigcheck-measured)."""
    from rigcheck.engine.measure import references
    from rigcheck.engine.trust import expectations

    model = Model("AMD EPYC 9454", r"\bEPYC 9454\b", "cpu", peaks={"cpu_fp32": 3891.2}, peak_source="16 CPUs")
    entry = Reference(
        "AMD EPYC 9454", "matmul fp32 512", 998.0, "GFLOP/s", "rigcheck-measured", "x" * 50,
        "rigcheck-measured, 3 runs, 2026-12", "cpu matmul", "512", 3891.2, "cpu_fp32", 0.6,
    )  # fmt: skip
    monkeypatch.setattr(references, "MODELS", (*references.MODELS, model))
    monkeypatch.setattr(references, "REFERENCES", (*references.REFERENCES, entry))
    monkeypatch.setattr(expectations, "this_cpu", lambda: EPYC)


def run_scenario(tmp_path: Path, gpu_subject: dict[str, Any], cpu_subject: dict[str, Any]) -> list[Verdict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    code = textwrap.dedent(STAGE_PY).format(NORMAL=NORMAL, SUBJECTS=SUBJECTS, SLOW=SLOW)
    (tmp_path / "every_kind_stage.py").write_text(code)
    info = StageInfo("everykind", "every_kind_stage:figures", "every kind", {"quick": 240.0}, (str(tmp_path),))
    info = replace(info, fingerprint=False, per_device=True)
    heard: list[Any] = []

    def annotate(m: Measurement) -> Measurement:
        quiet = {"samples": 10, "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
        if m.device == "cpu":
            return replace(m, conditions=quiet | (cpu_subject if m.name in SUBJECTS else {}))
        gpu = {"gpu_name": H100, "clock_ratio": 0.99, "utilization_mean_pct": 99.0, "throttle": ["power cap"]}
        subject = m.device == "cuda:0" and m.name in SUBJECTS
        return replace(m, conditions=quiet | gpu | (gpu_subject if subject else {}))

    def history(m: Measurement) -> list[Past]:
        value, unit, _ = NORMAL[m.name]
        return [Past(run, value, unit) for run in (3, 2, 1)]

    request = RunRequest((info,), "cuda:0", "quick", gpus=GPUS)
    run = Run(RunPlan(1, request, tmp_path / "logs"), [heard.append], annotate)
    run.history = history
    run.start()
    assert run.wait(300), "the stage children did not finish"
    return [e for e in heard if isinstance(e, Verdict)]


def subject_of(verdict: Verdict) -> tuple[str, str, str] | None:
    """(kind, device, figure) of a verdict on one figure; None for a stage's summary."""
    if verdict.numbers.get("figure"):
        return verdict.check.split("-")[0], verdict.device, str(verdict.numbers["figure"])
    kind, _, figure = verdict.check.partition(" ")
    return (kind, verdict.device, figure) if figure and kind in KINDS else None


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_verdict_kind_quotes_one_cause_per_figure(tmp_path: Path, scenario: str, epyc_host: None) -> None:
    gpu_subject, cpu_subject, never = SCENARIOS[scenario]
    verdicts = run_scenario(tmp_path, gpu_subject, cpu_subject)
    causes: dict[tuple[str, str], set[str]] = {}
    kinds: set[str] = set()
    for verdict in verdicts:
        found = subject_of(verdict)
        if found is None or "cause" not in verdict.numbers:
            continue
        kind, device, figure = found
        if (device, figure) in {("cuda:0", name) for name in SUBJECTS} | {("cpu", "matmul fp32 512")}:
            kinds.add(kind)
            causes.setdefault((device, figure), set()).add(verdict.numbers["cause"])
            if verdict.status != Status.PASS:  # the words quote it too
                assert verdict.numbers["cause"] in verdict.explanation, verdict.explanation
            assert verdict.status not in never, (verdict.check, verdict.status, verdict.explanation)
            if verdict.status == Status.PASS and never:  # the setting or the disturbance is named
                assert verdict.numbers["cause"] in verdict.explanation, verdict.explanation
    assert kinds == KINDS, sorted(kinds)  # every kind of verdict spoke of a subject figure
    assert len(causes) == len(SUBJECTS), sorted(causes)
    for figure, said in causes.items():
        assert len(said) == 1, (figure, said)
    (count,) = [v for v in verdicts if v.check == "expectations"]
    assert count.status == Status.NOT_JUDGED and count.numbers["not_judged"] >= 1  # matmul bf16 8192: no reference
