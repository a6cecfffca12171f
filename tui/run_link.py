"""The app's link to a run carried by a background engine: start one, follow its events, ask it to stop."""

from __future__ import annotations

import os
import time
from typing import Any

from rigcheck.engine.events import Event, RunFinished
from rigcheck.engine.run.control import ControlError, control_path, request
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.follow import Follower
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store


class RunLink:
    """One run the app is attached to; `poll` is called on the app's thread and never blocks for long."""

    def __init__(self, store: Store, run_id: int) -> None:
        self.store = store
        self.run_id = run_id
        self.follower = Follower(store.path, run_id)
        self.ended: str | None = None  # the run's end status, once known

    @classmethod
    def start(cls, store: Store, request: RunRequest) -> RunLink:
        """Start the run in its own engine process (StartFailed says why not) and attach to it."""
        run_id, _pid = spawn(store.path, request)
        return cls(store, run_id)

    @staticmethod
    def live_run(store: Store) -> dict[str, Any] | None:
        """The newest run an engine is carrying now; a run this very process holds is not one to attach to."""
        return next((run for run in store.live_runs() if run["pid"] != os.getpid()), None)

    def poll(self) -> list[Event]:
        events = self.follower.poll()
        if any(isinstance(e, RunFinished) for e in events):
            self.ended = next(e.status for e in events if isinstance(e, RunFinished))
            return events
        run = self.follower.run()
        if run is not None and run["status"] != "running":
            events += self.follower.poll()
            self.ended = run["status"]
        elif run is None or not self.store.is_live(run):
            self.store.sweep_dead_runs()
            self.ended = "interrupted (its engine is gone)"
        return events

    def error(self) -> str | None:
        run = self.follower.run()
        return run.get("error") if run else None

    def ask(self, op: str) -> str | None:
        """Send a control request; None when it was taken, else why not."""
        try:
            request(control_path(self.store.path, self.run_id), op)
        except ControlError as error:
            return str(error)
        return None

    def stop(self, timeout: float = 15.0) -> bool:
        """Cancel the whole run and wait for its engine to write the end."""
        if self.ask("cancel") is not None:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.follower.run()
            if run is None or run["status"] != "running" or not self.store.is_live(run):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.follower.close()
