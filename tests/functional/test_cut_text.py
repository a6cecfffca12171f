"""Issue 43, item 7: text cut where a newcomer reads it. Compare keeps what tells two figures apart ("(numpy)"),
`history` at 80 columns never cuts a stage's name or a column's header mid-word, and a figure's trust reasons go
under the measurements at 80 columns rather than wrapping one cell into some 18 lines."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.compare import CompareScreen
from screen_text import screen_text

STAGES = ["probe", "health", "verify", "hostbugs", "matmul", "bandwidth", "links", "training"]
REASON = (
    "other processes kept 1.6 of 2 CPUs busy while this figure needed 2: yes (pid 4242, 1.0 CPUs), python "
    "(pid 977, 0.5 CPUs); next: stop them, or rerun with `--wait-quiet`"
)


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def on_a_terminal(store: Path, columns: int, *args: str) -> str:
    """`rigcheck ARGS` on a terminal `columns` wide (a pty), its colours taken off."""
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS=str(columns))
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    command = [sys.executable, "-m", "rigcheck.tui.cli", *args]
    done = subprocess.run(command, stdout=follower, stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # drained and closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert done.returncode == 0, done.stderr
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode().replace("\r\n", "\n"))


def cpu_run(store: Store, scale: float, device: str = "cpu", status: str = "complete") -> int:
    """A stored CPU run: torch's and numpy's matmul at three sizes, every figure SUSPECT for the same reason."""
    run_id = store.begin_run(STAGES, device, "standard", "python", [])
    store.record(run_id, StageStarted("matmul", device, 1, "python"))
    for size in (512, 1024, 16384):
        for library in ("", " (numpy)"):
            conditions = {"trust": "SUSPECT", "trust_reasons": [REASON], "verified": True}
            name = f"matmul fp32 {size}{library}"
            store.record(run_id, Measurement("matmul", name, 831.6 * scale, "GFLOP/s", 30.0, 5, device, {}, conditions))
    store.record(run_id, StageFinished("matmul", Status.PASS, 0))
    store.end_run(run_id, status, 0)
    return run_id


def test_a_cut_name_keeps_what_tells_it_from_its_twin() -> None:
    from rigcheck.tui.screens.compare import fit_names

    names = ["matmul fp32 1024 (numpy)", "matmul fp32 1024", "matmul fp32 16384 again", "cpu conv 256x128 fp32"]
    assert fit_names(names, 17) == ["…p32 1024 (numpy)", "matmul fp32 1024", "matmul fp32 1638…", "cpu conv 256x128…"]
    assert fit_names(names, 30) == names  # all fit: nothing cut
    assert fit_names(["matmul fp32 512 (numpy)", "matmul fp32 512"], 16) == ["…p32 512 (numpy)", "matmul fp32 512"]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_compare_shows_numpys_figures_apart_from_torchs(tmp_path: Path, size: tuple[int, int]) -> None:
    store = Store(tmp_path / "s.db")
    first, second = cpu_run(store, 1.0, "gpu-07 cuda:0"), cpu_run(store, 1.1, "gpu-07 cuda:0")
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=size) as pilot:
        app.push_screen(CompareScreen(store, first, second))
        await pilot.pause(0.5)
        rows = [line.split("  ")[0].strip() for line in screen_text(app).splitlines()[2:8]]
        assert len(set(rows)) == 6 and all(row.startswith(("matmul", "…")) for row in rows), rows
        assert sum("(numpy)" in row for row in rows) == 3, rows


@pytest.mark.parametrize("columns", [80, 120])
def test_history_never_cuts_a_stage_or_a_header_mid_word(tmp_path: Path, columns: int) -> None:
    store = Store(tmp_path / "s.db")
    cpu_run(store, 1.0, status="interrupted")
    cpu_run(store, 1.0, device="cuda:0,cuda:1")
    text = on_a_terminal(tmp_path / "s.db", columns, "history")
    assert max(len(line) for line in text.splitlines()) <= columns
    words = set(re.findall(r"[\w:]+", text))
    assert set(STAGES) <= words and {"device", "profile", "standard", "INTERRUPTED"} <= words, text
    assert {"cuda:0", "cuda:1"} <= words, text


@pytest.mark.parametrize("columns", [80, 120])
def test_a_figures_reasons_are_said_once_under_the_table_at_80_columns(tmp_path: Path, columns: int) -> None:
    store = Store(tmp_path / "s.db")
    run_id = cpu_run(store, 1.0)
    text = on_a_terminal(tmp_path / "s.db", columns, "show", str(run_id))
    table = text[text.index("measurements") :]
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert len(rows) <= 12, table  # six figures, two lines each at most: no cell of 18 lines
    flat = " ".join(text.split())
    assert flat.count("kept 1.6 of 2 CPUs busy") == 1 and "--wait-quiet" in flat, text
    assert all("SUSPECT" in row for row in rows if "matmul fp32" in row and "│ matmul │" in row), table
