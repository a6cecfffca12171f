"""The control socket's folder cannot be taken: a folder another user made, a file or a dangling link at
`$TMPDIR/rigcheck-UID`, or another XDG_RUNTIME_DIR in the caller's shell never stop `cancel`, and never
end in a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from stage_infos import TESTS_DIR, fake

PLANTS = ["another-user", "a-file", "a-dangling-link"]


def plant(path: Path, kind: str) -> None:
    """What another user could have left at the folder's fixed name."""
    if kind == "another-user":
        path.mkdir(mode=0o755)
        os.chown(path, 65534, 65534)
    elif kind == "a-file":
        path.write_text("not a folder")
    else:
        path.symlink_to(path.parent / "nowhere")


def cli(store: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TESTS_DIR / "cli_driver.py"), *args],
        env=dict(env, RIGCHECK_STORE=str(store), COLUMNS="120"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS_DIR,
    )


def status(store: Path, run_id: int) -> str:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


def wait_for_end(store: Path, run_id: int, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while status(store, run_id) == "running":
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    return status(store, run_id)


def shell(tmp_path: Path, xdg: Path | None = None) -> dict[str, str]:
    """A caller's environment: its own TMPDIR, and XDG_RUNTIME_DIR only where given."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    if xdg is not None:
        env["XDG_RUNTIME_DIR"] = str(xdg)
    return env


@pytest.mark.parametrize("kind", PLANTS)
def test_a_taken_fixed_folder_never_stops_cancel(tmp_path: Path, kind: str) -> None:
    if kind == "another-user" and os.getuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    env = shell(tmp_path)
    plant(Path(env["TMPDIR"]) / f"rigcheck-{os.getuid()}", kind)
    store = tmp_path / "s.db"
    started = cli(store, env, "run", "ok", "waits", "--detach", "--no-telemetry")
    assert started.returncode == 0, started.stderr
    cancelled = cli(store, env, "cancel", "1")
    assert "Traceback" not in cancelled.stderr
    assert cancelled.returncode == 0, cancelled.stderr
    assert "asked the engine to stop the run" in cancelled.stdout
    assert wait_for_end(store, 1) == "cancelled"
    listed = cli(store, env, "runs")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr


def test_cancel_finds_the_run_whatever_xdg_runtime_dir_the_caller_has(tmp_path: Path, short_dir: Path) -> None:
    first, second = short_dir / "xdg-a", short_dir / "xdg-b"
    for folder in (first, second):
        folder.mkdir(mode=0o700)
    store = tmp_path / "s.db"
    started = cli(store, shell(tmp_path, first), "run", "ok", "waits", "--detach", "--no-telemetry")
    assert started.returncode == 0, started.stderr
    for env in (shell(tmp_path, second), shell(tmp_path)):  # another runtime folder, or none at all
        listed = cli(store, env, "runs")
        assert "LIVE" in listed.stdout
    cancelled = cli(store, shell(tmp_path, second), "cancel", "1")
    assert cancelled.returncode == 0, cancelled.stderr
    assert wait_for_end(store, 1) == "cancelled"
    with sqlite3.connect(store) as db:
        recorded = Path(db.execute("SELECT control FROM runs WHERE id = 1").fetchone()[0])
    assert recorded.parent == first / "rigcheck"  # a sane runtime folder is used, and the path recorded


def test_an_unsafe_runtime_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.run.runtime import new_socket_dir, shared_fixed_dir, xdg_runtime

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    sane = tmp_path / "sane"
    sane.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(sane))
    assert xdg_runtime() == sane and new_socket_dir() == (sane / "rigcheck", False)
    open_to_all = tmp_path / "open"
    open_to_all.mkdir(mode=0o700)
    os.chmod(open_to_all, 0o777)
    link = tmp_path / "link"
    link.symlink_to(sane)
    for unsafe in (str(open_to_all), str(link), "relative/run", str(tmp_path / "missing")):
        monkeypatch.setenv("XDG_RUNTIME_DIR", unsafe)
        assert xdg_runtime() is None
        folder, fresh = new_socket_dir()
        try:
            assert fresh and folder.parent == tmp_path and folder.name.startswith("rigcheck-")
            assert folder.stat().st_uid == os.getuid() and folder.stat().st_mode & 0o777 == 0o700
            assert folder != shared_fixed_dir()  # a fresh name: nothing anyone made beforehand
        finally:
            folder.rmdir()


def said(app: RigcheckApp) -> str:
    return "\n".join(n.message for n in app._notifications)


async def test_c_in_the_app_never_crashes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    (tmp_path / "tmp").mkdir()
    plant(tmp_path / "tmp" / f"rigcheck-{os.getuid()}", "a-file")  # the engine is started under this TMPDIR
    store = Store(tmp_path / "s.db")
    stages = [fake("slow", "polite_wait", timeout=120), fake("slow2", "polite_wait", timeout=120)]
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=stages, device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: row(app, "slow")[2] == "running")
        await pilot.press("c")  # the taken name does not matter: the engine's socket is elsewhere
        await wait_until(pilot, lambda: row(app, "slow2")[2] == "running")
        assert "cancel" in row(app, "slow")[2] + row(app, "slow")[4] or row(app, "slow")[4] == "SKIP"
        recorded = Path(store.run(app.run_id)["control"])
        os.chmod(recorded.parent, 0o755)  # now a socket folder others can enter: refused and said
        try:
            await pilot.press("c")
            await pilot.pause(0.3)
            assert "lets others in" in said(app)
            assert app.is_running and app.running and row(app, "slow2")[2] == "running"
        finally:
            os.chmod(recorded.parent, 0o700)
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
    assert store.run(store.latest_run_id())["status"] == "complete"
