"""The reference table's lookups on both sides of each match: a PCI id or a name matches a model told apart by its
SM count only at that count; an exact entry never stands in for a longer name (only a stem entry does); a baseline
names one model, not any that sorts near it; and an entry's peak must be the model's, neither above nor below."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from rigcheck.engine.measure import references
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.measure.references import REFERENCES, Model, entry_problems, model_of, reference_for

H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(("sms", "model"), [(132, "H100 SXM"), (None, "H100 SXM"), (114, None), (133, None)])
def test_a_pci_id_matches_a_model_with_an_sm_count_only_at_that_count(sms: int | None, model: str | None) -> None:
    found = model_of("", sms=sms, pci_id="0x2330")  # the H100 SXM's id; an empty name matches no pattern
    assert (found.key if found else None) == model


@pytest.mark.parametrize(("sms", "model"), [(132, "H100 SXM"), (None, "H100 SXM"), (114, None)])
def test_a_name_matches_a_model_with_an_sm_count_only_at_that_count(sms: int | None, model: str | None) -> None:
    found = model_of(H100, sms=sms)
    assert (found.key if found else None) == model


def test_an_sm_count_above_256_matches_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython keeps one object for each int up to 256 only: an MI300X-sized count (304) read from the device is
    another object than the table's 304, and must match all the same."""
    big = Model("Big", r"\bBigGPU\b", "amd", sms=304, pci_ids=("0x9999",))
    monkeypatch.setattr(references, "MODELS", (*references.MODELS, big))
    read = int("30" + "4")  # as a device query returns it: a fresh object
    assert model_of("AMD BigGPU", sms=read) == big
    assert model_of("", sms=read, pci_id="0x9999") == big
    assert model_of("AMD BigGPU", sms=read - 1) is None


def test_an_exact_entry_never_stands_in_for_a_longer_name() -> None:
    exact = reference_for(H200, "matmul bf16 8192")
    assert exact is not None and exact.size == "8192"
    assert reference_for(H200, "matmul bf16 8192 transposed") is None  # another figure, not a size of this one
    stem = reference_for(H200, "device copy 16 GiB")  # a stem entry ("any" size) judges every size
    assert stem is not None and stem.size == "any"


def baseline(model: str, value: float) -> dict:
    entries = {f"{model}/best-bf16": {"value": value, "unit": "TFLOP/s", "source": "known-good box"}}
    return parse_baseline(json.dumps({"format": "rigcheck-baseline", "version": 1, "figures": entries}))


def test_a_baseline_names_one_model_whatever_sorts_near_it() -> None:
    h200s = baseline(H200, 980.0)
    table = reference_for(H100, "best-bf16", h200s, sms=132)  # "nvidia h200" sorts after "nvidia h100 ..."
    assert table is not None and table.kind != "baseline" and table.value == 794.5
    assert reference_for("NVIDIA H20", "best-bf16", h200s) is None  # a prefix of the name is another model
    own = reference_for(H200, "best-bf16", h200s)
    assert own is not None and own.kind == "baseline" and own.value == 980.0
    spaced = reference_for("nvidia  h200", "best-bf16", h200s)  # case and spacing aside, the same name
    assert spaced is not None and spaced.kind == "baseline"


@pytest.mark.parametrize("peak", [4700.0, 4900.0])
def test_an_entry_s_peak_must_be_its_model_s_neither_below_nor_above(peak: float) -> None:
    copy = next(r for r in REFERENCES if r.model == "H200" and r.figure == "device copy 4 GiB")
    assert copy.peak == 4800.0 and entry_problems(copy) == []
    (problem,) = entry_problems(replace(copy, peak=peak))
    assert "not the model's memory datasheet figure" in problem


def test_a_cpu_entry_s_peak_is_a_cpu_peak_and_a_gpu_entry_s_is_not() -> None:
    cpu = next(r for r in REFERENCES if r.figure_kind == "cpu matmul")
    assert entry_problems(cpu) == []
    (problem,) = entry_problems(replace(cpu, peak_of=cpu.peak_of.removeprefix("cpu_")))
    assert "is not one of ('cpu_" in problem
    gpu = next(r for r in REFERENCES if r.figure_kind == "matmul" and r.model == "H200" and "bf16" in r.figure)
    assert entry_problems(gpu) == []
    (problem,) = entry_problems(replace(gpu, peak_of="cpu_" + gpu.peak_of))
    assert "is not one of ('bf16',)" in problem
