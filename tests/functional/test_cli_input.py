"""Bad input to the command line: one line on stderr, exit 2, and nothing run, stored or created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import RIGCHECK, assert_one_line_error, rigcheck
from rigcheck.engine.run.preflight import Interpreter, UsageError, check_device, inspect_python


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (root ignores permission bits, but not /sys)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "readonly"
    folder.mkdir(mode=0o500)
    return folder


def test_a_python_that_exits_zero_without_answering_is_refused(tmp_path: Path) -> None:
    done = rigcheck("run", "probe", "--python", "/usr/bin/true", store=tmp_path / "s.db")
    assert_one_line_error(done, "/usr/bin/true", "not a Python with torch")
    assert not (tmp_path / "s.db").exists()


def test_an_interpreter_printing_something_else_is_not_taken_for_torch(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'RIGCHECK-PYTHON {not json'\necho 'Python 3.12.1'\n")
    fake.chmod(0o755)
    with pytest.raises(UsageError, match="not a Python with torch"):
        inspect_python(str(fake))


def test_this_interpreter_answers_with_its_torch() -> None:
    import torch

    found = inspect_python(sys.executable)
    assert found.torch == torch.__version__
    assert found.gpus == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


@pytest.mark.parametrize(
    ("device", "gpus", "build", "words"),
    [
        ("cuda:0", 0, "CPU-only", ["sees no GPU", "CUDA or ROCm build"]),
        ("cuda:0", 0, "CUDA 13.0", ["sees no GPU", "CUDA_VISIBLE_DEVICES"]),
        ("cuda:7", 2, "CUDA 13.0", ["sees 2 GPU(s)", "cuda:0 to cuda:1"]),
        ("cuda:1", 1, "ROCm 6.4", ["sees 1 GPU(s)", "use cuda:0 or all"]),
    ],
)
def test_a_gpu_the_interpreter_cannot_see_is_refused(device: str, gpus: int, build: str, words: list[str]) -> None:
    with pytest.raises(UsageError) as error:
        check_device(device, Interpreter("/x/python", "3.12", "2.13.0", build, gpus))
    for word in [device, *words]:
        assert word in str(error.value)


@pytest.mark.parametrize("device", ["cpu", "all", "cuda:0", "cuda:1"])
def test_a_gpu_that_is_there_passes_and_the_next_index_is_refused(device: str) -> None:
    two = Interpreter("/x/python", "3.12", "2.13.0", "CUDA 13.0", 2)
    assert check_device(device, two) is None  # accepted: no UsageError
    if device.startswith("cuda:"):  # the same device on an interpreter that sees one GPU fewer is refused
        fewer = Interpreter("/x/python", "3.12", "2.13.0", "CUDA 13.0", int(device[5:]))
        with pytest.raises(UsageError, match=f"--device {device}: "):
            check_device(device, fewer)


def test_bad_report_paths_are_refused_before_the_run(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    cases = [
        (["--json", str(tmp_path / "nofolder" / "out.json")], ["--json", "does not exist"]),
        (["--json", str(tmp_path)], ["--json", "is a folder"]),
        (["--junit", str(tmp_path / "nofolder" / "j.xml")], ["--junit", "does not exist"]),
        (["--junit", str(unwritable_folder(tmp_path) / "j.xml")], ["--junit", "cannot write"]),
    ]
    for args, words in cases:
        assert_one_line_error(rigcheck("run", "probe", *args, store=store), *words)
    assert not store.exists()  # refused before the store was opened: nothing ran


def test_a_store_in_a_folder_that_does_not_exist_is_an_error_not_a_new_store(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "s.db"
    for args in (["history", "--store", str(missing)], ["--store", str(missing), "history"]):
        assert_one_line_error(rigcheck(*args, store=tmp_path / "env.db"), "--store", "does not exist")
    assert_one_line_error(rigcheck("run", "probe", store=missing), "RIGCHECK_STORE", "does not exist")
    assert not (tmp_path / "typo").exists() and not (tmp_path / "env.db").exists()


def test_export_to_a_folder_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    done = rigcheck("export", "last", "-o", str(tmp_path / "nofolder" / "r.json"), store=tmp_path / "s.db")
    assert_one_line_error(done, "--output", "does not exist")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["compare", "1", "1"], ["two different runs"]),
        (["compare", "1", "99"], ["no run 99"]),
        (["compare", "1", "abc"], ["abc"]),
        (["compare", "1"], ["RUN"]),
        (["export", "1", "--format", "xml"], ["xml", "junit"]),
    ],
)
def test_bad_runs_given_to_compare_and_export(tmp_path: Path, args: list[str], words: list[str]) -> None:
    from rigcheck.engine.store import Store

    Store(tmp_path / "s.db").begin_run(["probe"], "cpu", "quick", sys.executable, [])
    assert_one_line_error(rigcheck(*args, store=tmp_path / "s.db"), *words)


def test_version() -> None:
    done = subprocess.run([*RIGCHECK, "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("rigcheck 0.")


def test_the_app_without_a_terminal_says_so_and_points_to_run(tmp_path: Path) -> None:
    env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"))
    for args in ([], ["--device", "cpu"], ["app"]):
        done = subprocess.run(
            [*RIGCHECK, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=30
        )
        assert_one_line_error(done, "needs a terminal", "rigcheck run")
        assert done.stdout == ""
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("asked", "gpus", "device", "listed"),
    [
        (None, 0, "cpu", ()),
        (None, 1, "cuda:0", ("cuda:0",)),
        (None, 3, "all", ("cuda:0", "cuda:1", "cuda:2")),
        ("all", 2, "all", ("cuda:0", "cuda:1")),
        ("cpu", 4, "cpu", ()),
        ("cuda:0,cuda:3", 4, "cuda:0,cuda:3", ("cuda:0", "cuda:3")),
    ],
)
def test_the_run_uses_every_gpu_torch_sees_unless_told(asked, gpus, device, listed) -> None:  # type: ignore[no-untyped-def]
    from rigcheck.engine.run.preflight import run_devices

    assert run_devices(asked, Interpreter("/x/python", "3.12", "2.13.0", "CUDA 13.0", gpus)) == (device, listed)


def test_a_list_naming_a_missing_gpu_is_refused() -> None:
    from rigcheck.engine.run.preflight import run_devices

    with pytest.raises(UsageError, match="cuda:3"):
        run_devices("cuda:0,cuda:3", Interpreter("/x/python", "3.12", "2.13.0", "CUDA 13.0", 2))
