"""The real `rigcheck` command: exit codes, one-line errors, and reports that hold what was measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import RIGCHECK, assert_one_line_error, rigcheck


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("probe")
    out = folder / "out.json"
    done = rigcheck("run", "probe", "--device", "cpu", "--json", str(out), store=folder / "s.db")
    return folder / "s.db", json.loads(out.read_text()) if out.exists() else {}, done


def test_probe_on_cpu_exits_zero_and_writes_facts_and_fingerprint(probed) -> None:  # type: ignore[no-untyped-def]
    _, report, done = probed
    assert done.returncode == 0, done.stderr
    facts = report["facts"]["probe"]
    assert facts["interpreter"]["executable"] == sys.executable
    assert facts["torch"]["torch"].startswith("2.")
    assert facts["cpu"]["usable_cpus"] >= 1
    assert len(report["fingerprint"]["digest"]) == 12
    assert report["fingerprint"]["basis"]["torch"] == facts["torch"]["torch"]
    checks = {v["check_name"]: v["status"] for v in report["verdicts"]}
    assert checks["cpu"] == "PASS"
    if facts["devices"] == []:
        assert checks["gpu"] == "SKIP"  # no GPU here: says why, and does not fail the CPU
        assert "no usable GPU" in next(v for v in report["verdicts"] if v["check_name"] == "gpu")["explanation"]


def test_asking_for_a_gpu_that_is_not_there_is_refused_before_anything_runs(tmp_path: Path) -> None:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for index in sorted({count, 7}):
        if index < count:
            continue
        done = rigcheck("run", "probe", "--device", f"cuda:{index}", store=tmp_path / "s.db")
        assert_one_line_error(done, f"cuda:{index}", f"sees {count} GPU" if count else "sees no GPU")
        assert done.stdout == ""
    assert not (tmp_path / "s.db").exists()  # nothing was started or stored


def test_show_history_and_every_export_format(probed) -> None:  # type: ignore[no-untyped-def]
    store, report, _ = probed
    run_id = str(report["run"]["id"])
    history = rigcheck("history", store=store)
    assert history.returncode == 0 and "probe" in history.stdout
    show = rigcheck("show", "last", store=store)
    assert show.returncode == 0 and "CPU usable" in show.stdout
    as_json = json.loads(rigcheck("export", run_id, "--format", "json", store=store).stdout)
    assert as_json["facts"] == report["facts"]
    as_csv = rigcheck("export", run_id, "--format", "csv", store=store).stdout.splitlines()
    assert as_csv[0].startswith("kind,stage,name") and any(",probe,cpu," in r for r in as_csv)
    as_md = rigcheck("export", run_id, "--format", "md", store=store).stdout
    assert as_md.startswith(f"# rigcheck run {run_id}") and "| probe | cpu | cpu | PASS |" in as_md


def test_unknown_stage_names_the_valid_ones(tmp_path: Path) -> None:
    assert_one_line_error(rigcheck("run", "nosuch", store=tmp_path / "s.db"), "nosuch", "probe")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "--device", "gpu7"], ["gpu7", "cpu"]),
        (["run", "--profile", "huge"], ["huge", "quick"]),
        (["run", "--timeout", "-1"], ["--timeout"]),
        (["run", "--bogus"], ["--bogus"]),
        (["show", "999"], ["999"]),
        (["show", "abc"], ["abc"]),
        (["export", "last", "--format", "xml"], ["xml"]),
        (["run", "--python", "/nonexistent/python"], ["/nonexistent/python"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], words: list[str]) -> None:
    assert_one_line_error(rigcheck(*args, store=tmp_path / "s.db"), *words)


def test_corrupt_store_is_reported_and_left_untouched(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    before = bad.read_bytes()
    for args in (["history"], ["run", "probe"], ["show", "last"]):
        assert_one_line_error(rigcheck(*args, store=bad), str(bad), "corrupt")
    assert bad.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.db"]


def test_store_flag_overrides_the_environment(tmp_path: Path) -> None:
    done = rigcheck("history", "--store", str(tmp_path / "flag.db"), store=tmp_path / "env.db")
    assert done.returncode == 0
    assert (tmp_path / "flag.db").exists() and not (tmp_path / "env.db").exists()


def test_stages_lists_probe() -> None:
    done = subprocess.run([*RIGCHECK, "stages"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("probe")
