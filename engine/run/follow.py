"""Following a run: every event the engine wrote, in order, from the first one on; the one follower that
`rigcheck follow` and the app both use.

`Follower` (stored_events.py, kept importable from here) reads the store through a read connection of its own.
`RunFollower`
reads the store's backlog, then the owner's stream (events pushed as they happen, each with its store
sequence number, so the seam has no gap and no duplicate); when the owner is gone or has no stream it
reads the store alone, as often as POLL_S, until the run has ended.

An engine that stops answering (SIGSTOPped, or hung) is noticed within CHECK_S of silence: the follower
yields an EngineQuiet saying so, again every REPEAT_S while it lasts, and one more when the engine
answers again. It keeps following: a stopped engine that resumes carries the run on.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Event, RunFinished
from rigcheck.engine.run.control import ControlError, NoAnswer, request, subscribe
from rigcheck.engine.run.sockets import socket_of, stopped_pid
from rigcheck.engine.run.stored_events import Follower
from rigcheck.engine.run.wire import parse_line
from rigcheck.engine.telemetry.sample import Sample

__all__ = ["EngineQuiet", "Followed", "Follower", "RunFollower", "SampleBacklog"]

POLL_S = 0.1  # how often the store is read when there is no stream to read
WAKE_S = 0.1  # how soon a follower that is asked to stop notices
SAMPLE_BACKLOG_S = 60.0  # telemetry stored before a viewer joined, for its plots
GONE = "interrupted (its engine is gone)"
CHECK_S = 2.0  # silence after which the follower asks whether the engine still answers
PING_TIMEOUT_S = 2.0  # how long a ping waits for the engine's answer
REPEAT_S = 30.0  # how often a lasting silence is said again
JOIN_S = 10.0  # how long after its start a run's socket is looked for again (the engine records it early on)
END_WAIT_S = 10.0  # how long a follower that saw the run's last event waits for its owner to store the run's end


@dataclass(frozen=True)
class SampleBacklog:
    """The telemetry the engine stored before the viewer joined (once a second), yielded once, first."""

    samples: list[Sample]


@dataclass(frozen=True)
class EngineQuiet:
    """The run's engine does not answer (`answering` False: stopped or hung, `text` says which), or
    answers again (True)."""

    answering: bool
    text: str


Followed = Event | Sample | SampleBacklog | EngineQuiet


class RunFollower:
    """Follows one run to its end: iterate `follow()` for its events (and, with `samples`, the engine's
    telemetry: a SampleBacklog, then each Sample as it comes); then `ended` is the run's end status and
    `gone` says its engine died."""

    def __init__(self, store: Any, run_id: int, samples: bool = False, stop: threading.Event | None = None) -> None:
        self.store = store  # a Store: is_live and sweep_dead_runs; reads go through our own connection
        self.run_id = run_id
        self.want_samples = samples
        self.stop = stop or threading.Event()
        self.reader = Follower(store.path, run_id)
        self.ended: str | None = None
        self.gone = False
        self.error: str | None = None  # the run's stored error, read at its end
        self.notes: list[str] = []  # the engine's telemetry notes, from its hello
        self.subscribed = False  # whether the owner ever took us as a subscriber
        self.streamed = 0  # events that came by the stream
        self._rejoin = False
        self.store_reads = 0  # times the store was asked for new events (for tests and benches)
        self.quiet_since: float | None = None  # since when the engine has not answered (monotonic)
        self._checked = time.monotonic()
        self._said = 0.0

    def follow(self) -> Iterator[Followed]:
        try:
            stream = self._subscribe()
            while self.ended is None and not self.stop.is_set():
                if stream is not None:
                    yield from self._read_stream(*stream)
                    stream = None
                    if self.ended is not None or self.stop.is_set():
                        break
                yield from self._from_store()
                if self.ended is not None:
                    break
                yield from self._watch()
                if self._check_end():
                    status = self.ended
                    yield from self._from_store()  # the end written between the two reads
                    self.ended = status
                    break
                stream = self._subscribe() if self._rejoin else None  # dropped while the run goes on: join again
                if stream is None:
                    self.stop.wait(POLL_S)
            if self.ended is not None and self.error is None:
                self.error = self._stored_error()
        finally:
            self.reader.close()

    def _stored_error(self) -> str | None:
        """The run's stored error. A run that ended in error has its reason written by its owner just after its last
        event: a follower of the store alone may read that event first, so it waits for the reason (bounded, and
        not once the owner is gone)."""
        deadline = time.monotonic() + END_WAIT_S
        while True:
            run = self.reader.run()
            error = run.get("error") if run else None
            if error or self.ended != "error" or run is None or not self.store.is_live(run):
                return error
            if time.monotonic() > deadline or self.stop.wait(POLL_S):
                return error

    def _subscribe(self) -> tuple[socket.socket, bytes] | None:
        run = self.reader.run()
        if stopped_pid(run) is not None:
            self._rejoin = True  # a stopped engine cannot take us on: asked again once it runs
            return None
        try:
            sock, hello, rest = subscribe(socket_of(self.store, self.run_id, run))
        except ControlError:
            # not live, or an engine without a stream: the store alone; but an engine that has only just
            # started may not have recorded its socket yet: it is looked for again
            self._rejoin = bool(
                run and run["status"] == "running" and not run.get("control") and time.time() - run["started"] < JOIN_S
            )
            return None
        self.subscribed = self._rejoin = True
        self.notes = [str(n) for n in hello.get("notes", [])]  # type: ignore[attr-defined]
        return sock, rest

    def _from_store(self) -> Iterator[Event]:
        self.store_reads += 1
        for event in self.reader.poll():
            yield event
            if isinstance(event, RunFinished):
                self.ended = event.status

    def _backlog(self) -> Iterator[Followed]:
        """What the engine stored before we joined: the last minute of telemetry, and every event up to the
        hello's sequence number at least (the owner only sends what is stored)."""
        if self.want_samples:
            yield SampleBacklog(self.reader.samples(time.time() - SAMPLE_BACKLOG_S))
        yield from self._from_store()

    def _read_stream(self, sock: socket.socket, pending: bytes) -> Iterator[Followed]:
        with sock:
            yield from self._backlog()
            sock.setblocking(False)
            while self.ended is None and not self.stop.is_set():
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield from self._item(line)
                    if self.ended is not None:
                        break
                if self.ended is not None:
                    break
                ready, _, _ = select.select([sock], [], [], WAKE_S)
                if not ready:
                    yield from self._watch()
                    continue
                try:
                    chunk = sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    return  # the owner ended the stream (the run's end) or dropped us: the store has the rest
                pending += chunk
                self._checked = time.monotonic()  # it speaks: no need to ask
                if self.quiet_since is not None:
                    yield from self._answers_again()
            if self.ended not in (None, "complete"):  # a complete run's end is the one it sent: nothing to wait for
                self._until_closed(sock)

    def _until_closed(self, sock: socket.socket) -> None:
        """After the run's last event: wait (bounded) for the owner to end the stream, which it does only once it
        has stored the run's end. The last event says how the runner ended (`cancelled`); the end stored after it
        may say more (`interrupted`, or `error` with its reason), and that is what the follower reports."""
        deadline = time.monotonic() + END_WAIT_S
        while not self.stop.is_set() and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([sock], [], [], min(WAKE_S, left))
            if not ready:
                continue
            try:
                if not sock.recv(1 << 16):
                    return
            except BlockingIOError:
                continue
            except OSError:
                return

    def _item(self, line: bytes) -> Iterator[Followed]:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            item = parse_line(line)
            if isinstance(item, Sample):
                if self.want_samples:
                    yield item
            elif item is not None:
                seq, event = item
                if seq <= self.reader.last_id:
                    return  # read from the store already
                self.reader.last_id = seq
                self.streamed += 1
                if event is not None:
                    yield event
                    if isinstance(event, RunFinished):
                        self.ended = event.status

    def _watch(self) -> Iterator[EngineQuiet]:
        """After CHECK_S without a word from the engine: does it still answer? Say when it stops, every
        REPEAT_S while it lasts, and when it answers again."""
        now = time.monotonic()
        if now - self._checked < CHECK_S:
            return
        problem = self._not_answering()
        self._checked = now = time.monotonic()
        if problem is None:
            if self.quiet_since is not None:
                yield from self._answers_again()
        elif self.quiet_since is None:
            self.quiet_since = self._said = now
            yield EngineQuiet(False, problem)
        elif now - self._said >= REPEAT_S:
            self._said = now
            yield EngineQuiet(False, f"{problem} (for {now - self.quiet_since:.0f} s)")

    def _answers_again(self) -> Iterator[EngineQuiet]:
        quiet = time.monotonic() - (self.quiet_since or time.monotonic())
        self.quiet_since = None
        yield EngineQuiet(True, f"its engine answers again (after {quiet:.0f} s)")

    def _not_answering(self) -> str | None:
        """Why the live run's engine does not answer now, or None (it does, or it is gone: _check_end's)."""
        run = self.reader.run()
        if run is None or run["status"] != "running" or not self.store.is_live(run):
            return None
        pid = stopped_pid(run)
        if pid is not None:
            return (
                f"its engine (pid {pid}) is stopped (SIGSTOP or Ctrl-Z): nothing is recorded until `kill -CONT {pid}`"
            )
        try:
            request(socket_of(self.store, self.run_id, run), "ping", PING_TIMEOUT_S)
        except NoAnswer:
            return f"its engine (pid {run['pid']}) does not answer"
        except ControlError:
            return None  # no socket to ask (an engine without one): its pid is all there is to watch
        return None

    def _check_end(self) -> bool:
        """Has the run ended (its row says so) or its engine gone?"""
        run = self.reader.run()
        if run is None:
            self.ended, self.gone = GONE, True
        elif run["status"] != "running":
            self.ended = run["status"]
            self.error = run.get("error")
        elif not self.store.is_live(run):
            self.ended, self.gone = GONE, True
            self.store.sweep_dead_runs()
        return self.ended is not None
