"""One run per GPU per machine, not per store: a second store's run on a held GPU is refused in one line,
the lock goes with its engine however it ends, and a taken lock folder never stops a run."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from rigcheck.engine.run.detach import StartFailed, spawn
from rigcheck.engine.run.owner import DeviceBusy, OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR, fake


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of this test's own: its lock folder, shared by this process and the engines it starts."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    return folder


def on(device: str, *names: str, force: bool = False) -> RunRequest:
    # slow: waits until cancelled, so a SIGTERM to its engine ends the run at once, not after the kill grace
    stages = tuple(fake(n, "polite_wait" if n == "slow" else None, timeout=120) for n in names)
    return RunRequest(stages, device, "quick", telemetry=False, options={"seconds": 20}, force=force)


def test_a_second_store_cannot_take_a_held_gpu(tmp_path: Path) -> None:
    first = OwnedRun(Store(tmp_path / "a.db"), on("cuda:0", "ok"))
    try:
        with pytest.raises(DeviceBusy) as refused:
            OwnedRun(Store(tmp_path / "b.db"), on("cuda:0", "ok"))
        said = str(refused.value)
        assert "\n" not in said and f"run {first.run_id} of store {tmp_path / 'a.db'}" in said
        assert f"(pid {os.getpid()})" in said and "--force" in said
        assert Store(tmp_path / "b.db").latest_run_id() is None  # refused before a run was begun
        other = OwnedRun(Store(tmp_path / "c.db"), on("cuda:1", "ok"))  # another GPU is free
        other.finish()
        forced = OwnedRun(Store(tmp_path / "d.db"), on("cuda:0", "ok", force=True))  # shared on request
        forced.finish()
    finally:
        first.finish()
    again = OwnedRun(Store(tmp_path / "b.db"), on("cuda:0", "ok"))  # released at the first run's end
    again.finish()
    lock = next((tmp_path / "tmp" / f"rigcheck-{os.getuid()}").glob("gpu-0.lock"))
    assert lock.stat().st_mode & 0o777 == 0o600 and lock.parent.stat().st_mode & 0o777 == 0o700


def test_the_cpu_is_not_locked(tmp_path: Path) -> None:
    first = OwnedRun(Store(tmp_path / "a.db"), on("cpu", "ok"))
    try:
        OwnedRun(Store(tmp_path / "b.db"), on("cpu", "ok")).finish()  # many stores' runs may share it
    finally:
        first.finish()


def test_an_engine_of_another_store_is_refused_and_its_lock_dies_with_it(tmp_path: Path) -> None:
    run_id, engine = spawn(tmp_path / "a.db", on("cuda:0", "slow"))
    try:
        with pytest.raises(StartFailed, match=f"gpu-0 is in use by run {run_id} of store .*a.db"):
            spawn(tmp_path / "b.db", on("cuda:0", "ok"))
    finally:
        os.kill(engine, signal.SIGKILL)  # no goodbye: the kernel lets go of its lock
    deadline = time.monotonic() + 30
    while psutil.pid_exists(engine) and psutil.Process(engine).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run_id, _ = spawn(tmp_path / "b.db", on("cuda:0", "ok"))
    deadline = time.monotonic() + 60
    while Store(tmp_path / "b.db").run(run_id)["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_taken_lock_folder_refuses_the_run_unless_forced(
    tmp_path: Path, own_tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no fallback free (XDG_RUNTIME_DIR unset, root's /run place taken too), a neighbour's plant would
    switch the lock off: the run is refused in one line, and --force goes on with a note."""
    from rigcheck.engine.run import runtime

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(runtime, "ROOT_LOCKS", own_tmpdir / "root-locks")
    (own_tmpdir / "root-locks").write_text("taken too")
    (own_tmpdir / f"rigcheck-{os.getuid()}").write_text("taken")
    with pytest.raises(DeviceBusy) as refused:
        OwnedRun(Store(tmp_path / "a.db"), on("cuda:0", "ok"))
    said = str(refused.value)
    assert "\n" not in said and "no machine-wide device lock" in said and "--force" in said, said
    assert Store(tmp_path / "a.db").latest_run_id() is None
    owned = OwnedRun(Store(tmp_path / "a.db"), on("cuda:0", "ok", force=True))
    assert owned.run_to_end() == 0
    assert any("no machine-wide device lock" in e for e in owned.session.run.listener_errors)


def test_a_gpu_is_named_as_the_machine_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.run.devlock import physical_name

    assert physical_name("cuda:1") == "gpu-1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert (physical_name("cuda:0"), physical_name("cuda:1")) == ("gpu-3", "gpu-1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f3a")
    assert physical_name("cuda:0") == "gpu-GPU-8f3a"


def test_the_cli_refuses_in_one_line_with_exit_2(tmp_path: Path) -> None:
    """`run --detach` reports the engine's refusal as every bad input is: one line, exit 2."""
    import subprocess

    run_id, engine = spawn(tmp_path / "a.db", on("cuda:0", "slow"))
    code = (
        "import sys; sys.argv = ['rigcheck', 'run', 'ok', '--detach', '--no-telemetry'];"
        "from rigcheck.engine.run import preflight;"
        "preflight.run_devices = lambda device, interpreter: ('cuda:0', ('cuda:0',));"
        "from rigcheck.engine.run import options; options.surely_no_gpu = lambda: False;"  # as on a GPU host
        "import runpy; runpy.run_path('cli_driver.py', run_name='__main__')"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=dict(os.environ, RIGCHECK_STORE=str(tmp_path / "b.db")),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=TESTS_DIR,
        )
    finally:
        os.kill(engine, signal.SIGTERM)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"in use by run {run_id} of store" in done.stderr
    with sqlite3.connect(tmp_path / "b.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_a_neighbours_plant_does_not_switch_roots_lock_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second real user makes `$TMPDIR/rigcheck-0` in a shared TMPDIR, XDG_RUNTIME_DIR unset (cron, sudo): root's
    locks move to a place only root can make, and a second run on the same GPU is still refused."""
    from other_user import as_user, second_user, shared_folder
    from rigcheck.engine.run import runtime

    with second_user() as mallory, shared_folder() as base:
        shared_tmp = base / "tmp"
        shared_tmp.mkdir()
        os.chmod(shared_tmp, 0o1777)
        monkeypatch.setenv("TMPDIR", str(shared_tmp))
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setattr(runtime, "ROOT_LOCKS", tmp_path / "run-rigcheck-locks")  # /run's, for this test only
        as_user(mallory, "mkdir", "-m", "0777", str(shared_tmp / f"rigcheck-{os.getuid()}"))
        first = OwnedRun(Store(tmp_path / "a.db"), on("cuda:0", "ok"))
        try:
            assert first.locks.note is None, first.locks.note
            with pytest.raises(DeviceBusy, match=f"in use by run {first.run_id} of store"):
                OwnedRun(Store(tmp_path / "b.db"), on("cuda:0", "ok"))
        finally:
            first.finish()
        assert (tmp_path / "run-rigcheck-locks" / "gpu-0.lock").is_file()
