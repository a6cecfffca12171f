"""Issue 44.4: `--baseline FILE` read anyone's file, also through her link in /tmp, and took any positive value: a
baseline of 0.001 made a clean figure at a quarter of the table's a PASS. Now the file gets the checks every store
gets (folders, link, owner; a real second user here) and each figure the table's unit and range checks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from other_user import as_user, second_user, shared_folder
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.trust.reference import reference_verdicts

H200 = "NVIDIA H200"
PEAK = 989.4  # the H200's bf16 datasheet peak in the table


def text(figures: dict[str, float], unit: str = "TFLOP/s") -> str:
    entries = {key: {"value": value, "unit": unit, "source": "a box"} for key, value in figures.items()}
    return json.dumps({"format": "rigcheck-baseline", "version": 1, "figures": entries})


def test_a_baseline_of_0_001_never_makes_a_quarter_of_the_table_a_pass() -> None:
    with pytest.raises(ValueError, match=r"0\.001 TFLOP/s is 1\.01e-06x of the H200.s datasheet peak 989\.4"):
        parse_baseline(text({f"{H200}/matmul bf16 8192": 0.001}))
    fine = parse_baseline(text({f"{H200}/matmul bf16 8192": 790.0}))
    quarter = Measurement("matmul", "matmul bf16 8192", 197.0, "TFLOP/s", 1.0, 20, "cuda:0", {}, {"gpu_name": H200})
    (verdict,) = reference_verdicts([quarter], "matmul", fine)
    assert verdict.status == Status.FAIL


@pytest.mark.parametrize(("share", "taken"), [(0.199, False), (0.201, True), (0.999, True), (1.001, False)])
def test_a_baseline_figure_lies_within_the_tables_range_of_its_peak(share: float, taken: bool) -> None:
    given = text({f"{H200}/best-bf16": share * PEAK})
    if taken:
        assert parse_baseline(given)["figures"][f"{H200}/best-bf16"]["value"] == pytest.approx(share * PEAK)
    else:
        with pytest.raises(ValueError, match="a reference must lie within 20%-100%"):
            parse_baseline(given)


def test_a_baseline_figure_is_in_the_tables_unit() -> None:
    with pytest.raises(ValueError, match=r"is in 'GB/s'; the table gives this figure in 'TFLOP/s'"):
        parse_baseline(text({f"{H200}/matmul bf16 4096": 790.0}, unit="GB/s"))
    assert parse_baseline(text({"ACME X1/matmul bf16 4096": 0.5}))  # a model the table does not know: no range


def test_her_baseline_file_and_her_link_to_it_are_refused(tmp_path: Path) -> None:
    good = text({f"{H200}/best-bf16": 790.0})
    with second_user() as mallory, shared_folder() as base:
        import pwd

        name = pwd.getpwuid(mallory).pw_name
        sticky = base / "sticky"
        sticky.mkdir()
        os.chmod(sticky, 0o1777)
        hers = sticky / "hers.json"
        as_user(mallory, "sh", "-c", f"printf '%s' '{good}' > '{hers}'")
        as_user(mallory, "ln", "-s", str(hers), str(sticky / "link.json"))
        mine = base / "mine.json"
        mine.write_text(good)
        as_user(mallory, "ln", "-s", str(mine), str(sticky / "to-mine.json"))
        db = tmp_path / "s.db"
        for given, says in (
            (hers, f"file {hers} belongs to {name}"),
            (sticky / "link.json", f"is a symbolic link of {name}'s"),
            (sticky / "to-mine.json", f"is a symbolic link of {name}'s"),
        ):
            done = rigcheck("run", "probe", "--device", "cpu", "--baseline", str(given), store=db)
            assert_one_line_error(done, "--baseline", says)
        assert not db.exists()
        (base / "rootlink.json").symlink_to(mine)  # root's own file, through root's own link: read
        done = rigcheck("run", "probe", "--device", "cpu", "--baseline", str(base / "rootlink.json"), store=db)
        assert done.returncode == 0, done.stderr
    assert sys.executable
