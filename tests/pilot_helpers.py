"""Small helpers the app's Pilot tests share: wait for a condition, read a stage's row."""

from __future__ import annotations

import asyncio

from rigcheck.tui.app import RigcheckApp


async def wait_until(pilot, condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await pilot.pause(0.05)


def row(app: RigcheckApp, stage: str) -> list[str]:
    return [str(cell) for cell in app.query_one("#stages-table").get_row(stage)]
