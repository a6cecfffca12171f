"""Issue 44: a broken `references.json` in the installed package (truncated, a FIFO, "NaN" or 1e-9 values) gave a
traceback, hung every command, or was taken: 1e-9 makes every figure a PASS, NaN too. The table is read as
untrusted data: one line naming the file and what is wrong with it, never a hang."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.measure.references import TABLE, load
from rigcheck.engine.measure.table_file import BrokenTable


def shipped() -> dict[str, Any]:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def with_first(data: dict[str, Any], section: str, **change: Any) -> dict[str, Any]:
    data[section][0].update(change)
    return data


def nan_literal(data: dict[str, Any]) -> str:
    """The table with its first value written as JSON's non-standard NaN, which Python's json reads as a float."""
    first = '"value": ' + json.dumps(data["references"][0]["value"])
    return json.dumps(data).replace(first, '"value": NaN', 1)


def written(tmp_path: Path, data: dict[str, Any] | str) -> Path:
    path = tmp_path / "references.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_the_shipped_table_and_a_copy_of_it_load(tmp_path: Path) -> None:
    models, references, _ = load(written(tmp_path, shipped()))
    assert len(models) >= 12 and len(references) >= 60


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: json.dumps(d)[:500], "not JSON"),
        (lambda d: "\udcff", "not JSON"),
        (lambda d: json.dumps(d).replace('"models"', '"modles"'), "no 'models'"),
        (lambda d: with_first(d, "references", value="NaN"), "not a finite number"),
        (lambda d: nan_literal(d), "NaN"),
        (lambda d: with_first(d, "references", value=1e-9), "of its peak"),
        (lambda d: with_first(d, "references", value=-1), "not a finite number above 0"),
        (lambda d: with_first(d, "references", value=True), "not a finite number"),
        (lambda d: with_first(d, "references", warn_below=0), "warn_below"),
        (lambda d: with_first(d, "models", peaks={"bf16": 1e400}), "not a finite number"),
        (lambda d: with_first(d, "references", unit="GB/s"), "not 'TFLOP/s'"),
        (lambda d: with_first(d, "references", source="nowhere"), "no source 'nowhere'"),
    ],
    ids=[
        "truncated",
        "not-utf8",
        "no-models",
        "NaN-text",
        "NaN-literal",
        "1e-9",
        "negative",
        "bool",
        "warn-0",
        "inf-peak",
        "unit",
        "source",
    ],
)
def test_a_broken_table_is_one_line_naming_it(tmp_path: Path, change: Any, words: str) -> None:
    data = change(shipped())
    path = tmp_path / "references.json"
    if data == "\udcff":
        path.write_bytes(b'{"models": "\xff"}')
    else:
        written(tmp_path, data)
    with pytest.raises(BrokenTable) as broken:
        load(path)
    text = str(broken.value)
    assert str(path) in text and words in text and "\n" not in text, text


def test_a_fifo_or_a_folder_in_its_place_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "references.json"
    os.mkfifo(fifo)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            load(fifo)
        except BaseException as error:  # handed to the test thread
            failed.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # a hang: open the FIFO's other end so the thread can leave
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("loading a FIFO for a table hung")
    assert isinstance(failed[0], BrokenTable) and "not a regular file" in str(failed[0]), failed
    with pytest.raises(BrokenTable, match="not a regular file"):
        load(tmp_path)
    with pytest.raises(BrokenTable, match="cannot be read"):
        load(tmp_path / "gone.json")
