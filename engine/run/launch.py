"""Starting a stage's child: a fresh interpreter, the device's warm child, or one started ahead of its stage, each
given the stage's order, its environment and its log file.

A fresh child runs `python -m rigcheck.engine.run.child` in the run's log folder (never the caller's: `-m`
imports from it), in a session of its own so that a terminal's Ctrl-C reaches the parent, which stops it.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from rigcheck.engine.events import StageFinished
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.childpath import absolute_program
from rigcheck.engine.run.no_child import skip_reason
from rigcheck.engine.run.order import StageOrder
from rigcheck.engine.run.plan import Child, RunPlan, stage_batches
from rigcheck.engine.run.warm_pool import WarmChild, WarmKey, WarmPool, adopt_parked, child_environment, start_warm
from rigcheck.engine.stage import SHARED_DIR_ENV, StageSpec

AHEAD_READY_S = 120.0  # a child started ahead that has not imported torch by then is closed; its stage starts one


@dataclass
class Running:
    """One started child of a batch: its process, the pipe its events come on, and, for a warm child, its key."""

    child: Child
    proc: subprocess.Popen[bytes]
    conn: Connection
    log_path: Path
    warm: WarmChild | None = None
    key: WarmKey | None = None
    finished: StageFinished | None = None


class Launcher:
    """Starts the children of one run's stages, from its plan, keeping warm ones in `warm`."""

    def __init__(self, plan: RunPlan, warm: WarmPool) -> None:
        self.plan = plan
        self.warm = warm

    def start(self, info: StageInfo, child: Child, log_path: Path, cancelled: Callable[[], bool]) -> Running:
        """The stage's child for `child`, running its order: one started ahead, a fresh one or a warm one (OSError
        where none could start)."""
        request = self.plan.request
        ahead = self._ahead_child(info, child, log_path, cancelled) if info.fresh_child and not request.cold else None
        if ahead is not None:  # no key: it runs this one stage and leaves
            return Running(child, ahead.proc, ahead.events, log_path, ahead)
        if request.cold or info.fresh_child:
            proc, conn = self._spawn(info, child, log_path)
            return Running(child, proc, conn, log_path)
        warm, key = self._warm_child(info, child, log_path)
        return Running(child, warm.proc, warm.events, log_path, warm, key)

    def start_ahead(self, later: Iterable[StageInfo]) -> None:
        """Start the children of the next stage that runs in fresh interpreters now, while this stage (one that
        measures no throughput) runs: they import torch beside it and wait, idle, until their stage comes."""
        plan, request = self.plan, self.plan.request
        fresh = next((info for info in later if info.fresh_child and skip_reason(info, request) is None), None)
        if fresh is None:
            return
        plan.log_dir.mkdir(parents=True, exist_ok=True)
        program, folder, env = absolute_program(request.python), plan.log_dir.absolute(), self._child_env(fresh)
        for batch in stage_batches(fresh, plan):
            for child in batch:
                log_path = child.log_path(plan.log_dir, fresh.name)
                self.warm.start_ahead(
                    fresh.name,
                    self._warm_key(fresh, child),
                    functools.partial(start_warm, program, env, folder, log_path, "ready"),
                )

    def _warm_key(self, info: StageInfo, child: Child) -> WarmKey:
        """Which warm child may run this stage's child: the same interpreter, device and extra import paths."""
        return (self.plan.request.python, child.device, info.extra_paths)

    def _order(self, info: StageInfo, child: Child, log_path: Path) -> StageOrder:
        request = self.plan.request
        options = dict(request.options) | dict(child.options)
        spec = StageSpec(info.name, child.device, request.profile, tuple(sorted(options.items())))
        return StageOrder(spec, info.target, info.fingerprint, str(log_path.absolute()), self._shared_dir())

    def _child_env(self, info: StageInfo) -> dict[str, str]:
        env = child_environment(*info.extra_paths)
        env[SHARED_DIR_ENV] = self._shared_dir()  # host work done once, read by every GPU's child
        return env

    def _shared_dir(self) -> str:
        return str(self.plan.log_dir.absolute() / "shared")

    def _warm_child(self, info: StageInfo, child: Child, log_path: Path) -> tuple[WarmChild, WarmKey]:
        """The device's warm child with this stage's order sent; a fresh one where none is idle or it died."""
        request = self.plan.request
        key = self._warm_key(info, child)
        order = self._order(info, child, log_path)
        warm = self.warm.take(key)
        if warm is None and not info.extra_paths:
            warm = adopt_parked(request.python)  # started before the preflight, importing torch beside it
        if warm is not None and warm.send(order):
            return warm, key
        if warm is not None:
            warm.close(0.0)
        program = absolute_program(request.python)
        warm = start_warm(program, self._child_env(info), self.plan.log_dir.absolute(), log_path)
        self.warm.started += 1
        if not warm.send(order):
            code = warm.close(0.0)
            raise OSError(f"the child exited at once (code {code})")
        return warm, key

    def _ahead_child(
        self, info: StageInfo, child: Child, log_path: Path, cancelled: Callable[[], bool]
    ) -> WarmChild | None:
        """The child started ahead for this stage and device, with the stage's order sent; None where there is
        none or it could not take the order (the stage then starts a fresh one, as without it)."""
        ahead = self.warm.take_ahead(info.name, self._warm_key(info, child), AHEAD_READY_S, cancelled)
        if ahead is not None and ahead.send(self._order(info, child, log_path)):
            return ahead
        if ahead is not None:
            ahead.close(0.0)
        return None

    def _spawn(self, info: StageInfo, child: Child, log_path: Path) -> tuple[subprocess.Popen[bytes], Connection]:
        plan, request = self.plan, self.plan.request
        order = self._order(info, child, log_path)
        read_fd, write_fd = os.pipe()
        log_dir = plan.log_dir.absolute()  # the child's folder: `-m` imports from it, so never the caller's
        env = self._child_env(info)
        with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:  # owner only
            proc = subprocess.Popen(
                [absolute_program(request.python), "-m", "rigcheck.engine.run.child", str(write_fd), order.to_json()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                env=env,
                cwd=log_dir,
                start_new_session=True,  # a terminal Ctrl-C reaches the parent, which stops the child
            )
        os.close(write_fd)  # or the parent never sees EOF
        return proc, Connection(read_fd, writable=False)
