"""A live run's events and telemetry pushed to its viewers as they happen, as newline-delimited JSON.

The owner publishes each event with the store's sequence number (its row id in `events`), read back
from the store so that the stream carries exactly what the store holds, and each telemetry sample
(coalesced: a subscriber that is behind gets only the newest). A subscriber first gets a hello line
with the last sequence number published before it joined, then every later event. Each subscriber
has a bounded queue and a sending thread of its own: one that falls behind or stops reading is
dropped, never waited for; it can re-read the store.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from rigcheck.engine.events import Event
from rigcheck.engine.run.follow import Follower
from rigcheck.engine.run.wire import encode_event, encode_hello, encode_sample
from rigcheck.engine.telemetry.sample import Sample

QUEUE_LINES = 4096  # a subscriber this many events behind is dropped
SEND_TIMEOUT_S = 5.0
CLOSE_WAIT_S = 1.0  # how long the run's end waits for subscribers to take their last lines


class Subscriber:
    """One viewer's connection: lines queue here and a thread of its own sends them."""

    def __init__(self, conn: socket.socket, hello: bytes, on_gone: Callable[[Subscriber], None]) -> None:
        self.conn = conn
        self._on_gone = on_gone
        self._lines: deque[bytes] = deque([hello])
        self._sample: Sample | None = None
        self._wake = threading.Condition()
        self._closing = False
        self.dropped = False
        conn.settimeout(SEND_TIMEOUT_S)
        self._thread = threading.Thread(target=self._send, name="rigcheck-stream", daemon=True)
        self._thread.start()

    def offer(self, line: bytes) -> bool:
        """Queue a line without ever waiting; False when the queue is full (the subscriber is too slow)."""
        with self._wake:
            if len(self._lines) >= QUEUE_LINES:
                return False
            self._lines.append(line)
            self._wake.notify()
        return True

    def offer_sample(self, sample: Sample) -> None:
        with self._wake:
            self._sample = sample  # a newer sample replaces one not yet sent
            self._wake.notify()

    def _next(self) -> bytes | Sample | None:
        with self._wake:
            while not (self._lines or self._sample or self._closing):
                self._wake.wait()
            if self._lines:
                return self._lines.popleft()
            if self._sample is not None:
                sample, self._sample = self._sample, None
                return sample
            return None  # closing, and everything queued is sent

    def _send(self) -> None:
        try:
            while (item := self._next()) is not None:
                self.conn.sendall(item if isinstance(item, bytes) else encode_sample(item))
        except OSError:
            pass  # the viewer hung up or stopped reading: it reads the store instead
        finally:
            self._hang_up()
            self._on_gone(self)

    def _hang_up(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)
        self.conn.close()

    def finish(self) -> None:
        """Send what is queued, then hang up."""
        with self._wake:
            self._closing = True
            self._wake.notify()

    def join(self, wait: float) -> None:
        self._thread.join(wait)
        if self._thread.is_alive():  # stuck in a send to a viewer that stopped reading: cut it off
            self.drop()
            self._thread.join(1.0)

    def drop(self) -> None:
        self.dropped = True
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)  # wakes a send in progress; the thread then ends


class Broadcast:
    """The owner's side of the stream: `on_event` and `on_sample` are hooked to the run and its sampler."""

    def __init__(self, store_path: Path, run_id: int, notes: Iterable[str] = ()) -> None:
        self.run_id = run_id
        self.notes = list(notes)
        self.last_seq = 0
        self.dropped = 0  # subscribers dropped for falling behind
        self._reader = Follower(store_path, run_id)
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._closed = False

    def _catch_up(self) -> list[tuple[int, str]]:
        rows = [(seq, payload) for seq, payload in self._reader.rows() if seq > self.last_seq]
        if rows:
            self.last_seq = rows[-1][0]
        return rows

    def subscribe(self, conn: socket.socket) -> None:
        """Take over an accepted connection: it gets the hello line, then every event after it."""
        with self._lock:
            if self._closed:
                conn.close()
                return
            if self._subscribers:
                self._send_new()  # what the others have not been sent yet goes to them, not to the newcomer
            else:
                with contextlib.suppress(Exception):
                    self._catch_up()  # what is stored already is the newcomer's backlog, read from the store
            self._subscribers.append(Subscriber(conn, encode_hello(self.last_seq, self.notes), self._forget))

    def _forget(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def on_event(self, _event: Event) -> None:
        """After the store has written an event: send every stored event not sent yet. Never raises."""
        with self._lock:
            if self._subscribers:  # else nothing to do: a subscriber catches up from the store when it joins
                self._send_new()

    def _send_new(self) -> None:
        try:
            rows = self._catch_up()
        except Exception:
            return  # the store is unreadable this time; the next event or the viewer's store read covers it
        for seq, payload in rows:
            line = encode_event(seq, payload)
            for subscriber in list(self._subscribers):
                if not subscriber.offer(line):
                    self.dropped += 1
                    self._subscribers.remove(subscriber)
                    subscriber.drop()

    def on_sample(self, sample: Sample) -> None:
        with self._lock:
            for subscriber in self._subscribers:
                subscriber.offer_sample(sample)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def close(self) -> None:
        """The run is over: each subscriber gets what is stored and queued (briefly), then the end of the stream."""
        with self._lock:
            self._closed = True
            if self._subscribers:
                self._send_new()
            subscribers, self._subscribers = list(self._subscribers), []
        for subscriber in subscribers:
            subscriber.finish()
        deadline = time.monotonic() + CLOSE_WAIT_S
        for subscriber in subscribers:
            subscriber.join(max(0.0, deadline - time.monotonic()))
        self._reader.close()
