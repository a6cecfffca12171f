"""The app's link to a run carried by a background engine: start one, follow it on a thread of its own, stop it.

The follower thread never touches a widget: it posts messages (tui/messages.py) and the app puts them
on the panels on its own thread. The app's thread never reads the store to follow a run.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from rigcheck.engine.events import LogLine, Progress
from rigcheck.engine.run import cancel
from rigcheck.engine.run.control import ControlError
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.follow import EngineQuiet, RunFollower, SampleBacklog
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.sample import Sample
from rigcheck.tui.messages import EngineSamples, RunEnded, RunEvent, RunProgress
from textual.message import Message
from textual.notifications import Notification, Notify

KEEP_SAMPLES = 1200  # two minutes at the engine's 10 Hz: the plots show one


class EngineTelemetry:
    """The run's engine's samples, kept on the app's thread as they arrive, read as a sampler is read."""

    def __init__(self) -> None:
        self.buffer: deque[Sample] = deque(maxlen=KEEP_SAMPLES)
        self.notes: list[str] = []

    def add(self, samples: list[Sample]) -> None:
        for sample in samples:
            if not self.buffer or sample.t > self.buffer[-1].t:
                self.buffer.append(sample)

    def latest(self) -> Sample | None:
        return self.buffer[-1] if self.buffer else None

    def window(self, t0: float, t1: float) -> list[Sample]:
        """Samples taken between t0 and t1; if none fell inside, the nearest one on each side."""
        inside = [s for s in self.buffer if t0 <= s.t <= t1]
        if inside:
            return inside
        before = next((s for s in reversed(self.buffer) if s.t < t0), None)
        after = next((s for s in self.buffer if s.t > t1), None)
        return [s for s in (before, after) if s is not None]


class RunLink:
    """One run the app is attached to, followed by a thread that posts what it sees to the app."""

    def __init__(self, store: Store, run_id: int) -> None:
        self.store = store
        self.run_id = run_id
        self._stop = threading.Event()
        self.follower = RunFollower(store, run_id, samples=True, stop=self._stop)
        self.telemetry = EngineTelemetry()  # filled by the app's handler, on the app's thread
        self._thread: threading.Thread | None = None

    @classmethod
    def start(cls, store: Store, request: RunRequest) -> RunLink:
        """Start the run in its own engine process (StartFailed says why not) and attach to it."""
        run_id, _pid = spawn(store.path, request)
        return cls(store, run_id)

    @staticmethod
    def live_run(store: Store) -> dict[str, Any] | None:
        """The newest run an engine is carrying now; a run this very process holds is not one to attach to."""
        return next((run for run in store.live_runs() if run["pid"] != os.getpid()), None)

    def begin(self, post: Callable[[Message], object]) -> None:
        """Follow the run on a thread of its own; everything it learns goes to `post` as a message."""
        self._thread = threading.Thread(target=self._follow, args=(post,), name="rigcheck-follow", daemon=True)
        self._thread.start()

    def _follow(self, post: Callable[[Message], object]) -> None:
        follower, run_id = self.follower, self.run_id
        try:
            for item in follower.follow():
                if isinstance(item, Sample):
                    post(EngineSamples(run_id, [item], follower.notes))
                elif isinstance(item, SampleBacklog):
                    post(EngineSamples(run_id, item.samples, follower.notes, backlog=True))
                elif isinstance(item, Progress):
                    post(RunProgress(run_id, item))
                elif isinstance(item, EngineQuiet):  # said where it is seen at once, and kept in the log
                    severity = "information" if item.answering else "warning"
                    post(Notify(Notification(f"run {run_id}: {item.text}", severity=severity, timeout=10)))
                    post(RunEvent(run_id, LogLine("engine", item.text, "info" if item.answering else "error")))
                else:
                    post(RunEvent(run_id, item))
        except Exception as error:  # following broke, not the run: say why the view stopped
            if not self._stop.is_set():
                post(RunEnded(run_id, "unknown (following it failed)", f"{type(error).__name__}: {error}"))
            return
        if not self._stop.is_set():
            post(RunEnded(run_id, follower.ended or "unknown", follower.error))

    def ask(self, op: str) -> str | None:
        """Send a control request; None when it was taken, else why not."""
        return cancel.ask(self.store, self.run_id, op)

    def send(self, op: str) -> None:
        """Send a control request; ControlError says why not, cancel.Queued that it waits for the engine.
        Nothing else escapes: a key press never takes the app down."""
        try:
            cancel.send(self.store, self.run_id, op)
        except ControlError:
            raise
        except Exception as error:
            raise ControlError(f"run {self.run_id} could not be asked: {type(error).__name__}: {error}") from None

    def stop(self, timeout: float = 15.0) -> str | None:
        """Cancel the whole run and wait for its engine to write the end; None once it has, else why not."""
        return cancel.stop(self.store, self.run_id, timeout)

    def close(self) -> None:
        """Stop following (the run goes on); the thread notices within a tenth of a second."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(1.0)
