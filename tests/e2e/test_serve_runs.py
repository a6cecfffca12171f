"""The real binary: Ctrl-C on `serve` stops the run a browser tab started (issue 43: it went on, LIVE, with its
engine and stage children, while the README said Ctrl-C "stops the server and its tabs")."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import aiohttp
import psutil
from test_serve import Served, start, stop, wait_listening


def engine_pids(store: Path) -> list[int]:
    with sqlite3.connect(store) as db:
        return [pid for (pid,) in db.execute("SELECT pid FROM runs WHERE pid IS NOT NULL")]


def runs(store: Path) -> list[tuple[int, str]]:
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return db.execute("SELECT id, status FROM runs ORDER BY id").fetchall()


async def start_a_run_in_a_tab(served: Served, store: Path) -> list[tuple[int, str]]:
    """A tab, as a browser opens it: once its app has drawn, `a` starts a run; then serve gets Ctrl-C."""
    address = f"http://127.0.0.1:{served.port}/{served.token}/ws?width=120&height=40"
    async with aiohttp.ClientSession() as session, session.ws_connect(address) as tab:
        drawn = b""
        while b"Stages" not in drawn:  # the app's first screen
            message = await asyncio.wait_for(tab.receive(), 120)
            assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
            drawn += message.data if isinstance(message.data, bytes) else message.data.encode()
        await tab.send_str(json.dumps(["stdin", "a"]))
        deadline = time.monotonic() + 120
        while not any(status == "running" for _, status in runs(store)):
            assert time.monotonic() < deadline, f"no run started: {runs(store)}"
            await asyncio.sleep(0.1)
        live = runs(store)
        assert stop(served) == 130  # Ctrl-C, the tab still open
    return live


def test_ctrl_c_stops_the_run_a_tab_started(tmp_path: Path) -> None:
    served = start(tmp_path)
    store = tmp_path / "s.db"
    try:
        wait_listening(served)
        live = asyncio.run(start_a_run_in_a_tab(served, store))
    finally:
        stop(served)
    assert live == [(1, "running")]
    assert runs(store) == [(1, "cancelled")]
    assert "rigcheck serve: stopped run 1, which a tab started" in served.log.read_text()
    engines = [psutil.Process(pid) for pid in engine_pids(store) if psutil.pid_exists(pid)]
    _gone, alive = psutil.wait_procs(engines, timeout=60)  # the engine ends once it has written the end
    assert not alive, alive
