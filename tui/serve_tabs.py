"""One browser tab's app process: started like `detach` starts the engine, and always ended with its tab.

textual-serve starts each tab's app through the shell in serve's working directory (`python -m ...`
imports that folder's `rigcheck/` first), and stops it by asking it to quit and waiting for ever: an app
that never read the request (a tab closed while it was still starting) kept running, past Ctrl-C on serve,
reparented to init. Here the app is started without a shell, with serve's own interpreter by its absolute
path and the working directory taken out of its import path, in a session of its own; it is asked to quit,
then its whole process group gets SIGTERM, then SIGKILL, each after a short grace; and it dies with serve
(PR_SET_PDEATHSIG) if serve itself is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from asyncio.subprocess import PIPE, Process
from typing import Any

from textual_serve.app_service import AppService

QUIT_S = 2.0  # how long an app has to quit when asked, and again after SIGTERM, before the next step


def end_group(pid: int, how: signal.Signals) -> None:
    """Signal a tab's whole process group (its app and whatever the app started in it); gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, how)


class TabApp(AppService):
    """textual-serve's AppService with a shell-free, isolated start and a stop that always ends the process."""

    def __init__(self, argv: list[str], live: set[TabApp], **kwargs: Any) -> None:
        super().__init__(" ".join(argv[:1] + argv[3:]), **kwargs)
        self.argv = argv
        self.live = live
        self.stopped: asyncio.Task[None] | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,  # its own group: Ctrl-C in serve's terminal is serve's, and killpg finds all
        )
        self.live.add(self)
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """End the app however it behaves; a cancelled caller (the tab's handler at shutdown) does not stop it."""
        if self._process is None:
            return
        if self.stopped is None:
            self.stopped = asyncio.ensure_future(self._end(self._process))
        await asyncio.shield(self.stopped)

    async def _end(self, process: Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_S)
            if self._stdin is not None:
                self._stdin.close()
            for how in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.wait(), QUIT_S)
                    break
                end_group(process.pid, how)
            await process.wait()
        end_group(process.pid, signal.SIGKILL)  # what the app left in its group
        # only now: a stop cut short (serve's loop closing) leaves the tab here for kill_now
        self.live.discard(self)
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, QUIT_S)
            self._task = None

    def kill_now(self) -> None:
        """The last resort, when serve's loop is gone: SIGKILL the tab's group."""
        if self._process is not None:
            end_group(self._process.pid, signal.SIGKILL)
