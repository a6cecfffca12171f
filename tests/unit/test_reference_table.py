"""The reference table as data: every entry a share of its model's datasheet peak (20-100%), in its kind's unit,
with a source; every value pinned by a snapshot so a change is a reviewed diff."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rigcheck.engine.measure.references import (
    MODELS,
    REFERENCES,
    SOURCES,
    TABLE,
    entry_problems,
    load,
    model_of,
    reference_for,
)

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "reference_table.json"


def snapshot() -> dict[str, str]:
    return {f"{r.model} / {r.figure}": f"{r.value:g} {r.unit} ({r.short})" for r in REFERENCES}


def test_every_entry_is_a_share_of_its_peak_in_its_unit() -> None:
    problems = [p for r in REFERENCES for p in entry_problems(r)]
    assert problems == []
    assert len(REFERENCES) >= 60 and len({r.model for r in REFERENCES}) >= 12


def test_every_entry_names_its_source() -> None:
    for r in REFERENCES:
        assert r.short and len(r.source) > 40, r
        if r.kind == "rigcheck-measured":  # date, torch and driver versions and the number of runs
            assert all(word in r.source for word in ("date 20", "torch ", "driver ", "run(s)")), r.source
        else:
            assert "commit " in r.source or "page " in r.source, r.source
    assert all(s["kind"] and s["short"] and s["cite"] for s in SOURCES.values())
    assert len({s["short"] for s in SOURCES.values()}) == len(SOURCES)  # a verdict's few words name one source
    assert len({(r.model, r.figure) for r in REFERENCES}) == len(REFERENCES)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"value": 4900.0}, "102% of its peak"),  # above the datasheet: a typo or the wrong model
        ({"value": 4800.0 * 0.199}, "20% of its peak"),  # just under a fifth
        ({"value": 2.333}, "0% of its peak"),  # DCGM's H200 floor of 2333 read in the wrong unit
        ({"unit": "MB/s"}, "not 'GB/s'"),
        ({"peak": 4900.0}, "not the model's memory datasheet figure"),
        ({"peak_of": "bf16"}, "is not one of ('memory',)"),
        ({"model": "H900"}, "no model 'H900'"),
    ],
)
def test_the_check_fires_on_a_unit_slip_or_a_share_out_of_range(change: dict, words: str) -> None:
    copy = next(r for r in REFERENCES if r.model == "H200" and r.figure == "device copy 4 GiB")
    assert entry_problems(copy) == []
    (problem,) = entry_problems(replace(copy, **change))
    assert words in problem


def test_the_share_edges_hold_on_both_sides() -> None:
    copy = next(r for r in REFERENCES if r.model == "H200" and r.figure == "device copy 4 GiB")
    assert entry_problems(replace(copy, value=4800.0)) == []  # exactly the peak
    assert entry_problems(replace(copy, value=0.2 * 4800.0)) == []  # exactly a fifth
    assert entry_problems(replace(copy, value=4800.5)) != []
    training = next(r for r in REFERENCES if r.figure_kind == "training")
    assert training.peak is None and entry_problems(training) == []  # samples/s has no datasheet figure


def test_no_source_cites_a_file_outside_the_repository_or_calls_another_host_this_one() -> None:
    """`references --all` prints every cite: none may point at a developer's absolute path (a design file that is
    not shipped), and a CPU entry's peaks are the measuring host's, not "this host's" (the reader's)."""
    cites = [str(s.get("cite", "")) for s in SOURCES.values()] + [m.peak_source for m in MODELS]
    assert not [c for c in cites if re.search(r"(^|[\s(])/(work|home|root|Users|tmp)/", c)]
    assert not [m.key for m in MODELS if "this host's" in m.peak_source]


def test_every_value_is_pinned() -> None:
    assert snapshot() == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_models_are_matched_by_pci_device_id_as_well_as_name() -> None:
    assert model_of("", pci_id="0x2335").key == "H200"  # type: ignore[union-attr]
    assert model_of("GPU 0", pci_id="1B38").key == "Tesla P40"  # type: ignore[union-attr]
    assert model_of("AMD Radeon PRO W7900").key == "Radeon PRO W7900"  # type: ignore[union-attr]
    assert model_of("unknown", pci_id="0xffff") is None
    assert all(m.peaks and m.peak_source for m in MODELS)


def test_a_stem_entry_judges_every_size_and_an_exact_one_comes_first() -> None:
    assert reference_for("NVIDIA H200", "device copy 4 GiB").value == 4259.3  # type: ignore[union-attr]
    assert reference_for("NVIDIA H200", "device copy 8 GiB").short == "NVIDIA DCGM diag-skus.yaml"  # type: ignore[union-attr]
    assert reference_for("NVIDIA A100-SXM4-80GB", "device copy 1 GiB").value == 1773.9  # type: ignore[union-attr]
    assert reference_for("Tesla P40", "host to device pinned 256 MiB").value == 11.84  # type: ignore[union-attr]
    assert reference_for("NVIDIA H200", "device copy") is None  # a stem needs a size after it
    assert reference_for("Tesla P40", "host to device pageable 1 GiB") is None


def test_the_table_loads_from_its_data_file_alone(tmp_path: Path) -> None:
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    data["references"] = data["references"][:1]
    (tmp_path / "t.json").write_text(json.dumps(data))
    models, references, _ = load(tmp_path / "t.json")
    assert len(references) == 1 and len(models) == len(MODELS)


if __name__ == "__main__":  # after a reviewed change to the table: rewrite the snapshot
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
