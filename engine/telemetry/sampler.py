"""The sampler thread: reads host and GPUs at a drift-free rate, keeps a ring buffer, tells listeners."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

from rigcheck.engine.telemetry.host import HostSource
from rigcheck.engine.telemetry.sample import Sample
from rigcheck.engine.telemetry.sources import GpuSource, available_gpu_sources

Listener = Callable[[Sample], None]


class Sampler:
    def __init__(
        self,
        interval: float = 0.1,
        keep_seconds: float = 3600.0,
        host: HostSource | None = None,
        gpus: list[GpuSource] | None = None,
    ) -> None:
        self.interval = interval
        self._repaced = False  # set by pace(): the loop starts a new schedule at the new interval
        self.host = host or HostSource()
        if gpus is None:
            gpus, self.notes = available_gpu_sources()
        else:
            self.notes = []
        self.gpus = gpus
        self.buffer: deque[Sample] = deque(maxlen=max(10, int(keep_seconds / interval)))
        self.listeners: list[Listener] = []
        self.missed = 0  # ticks skipped because a read or a listener ran late: samples never taken
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rigcheck-sampler", daemon=True)

    def read_once(self) -> Sample:
        readings = []
        for source in self.gpus:
            try:
                readings.extend(source.read())
            except Exception:
                continue  # a sensor that fails this time shows as missing, never stops the loop
        return Sample(time.time(), self.host.read(), tuple(readings))

    def pace(self, interval: float) -> None:
        """Sample every `interval` seconds from the next tick on: the app slows its own sampler while no run
        is live (the figures' conditions come from the engine's sampler, never from this one)."""
        if interval > 0 and interval != self.interval:
            self.interval, self._repaced = interval, True

    def _loop(self) -> None:
        start = time.monotonic()
        tick = 0
        while not self._stop.is_set():
            if self._repaced:
                start, tick, self._repaced = time.monotonic(), 0, False
            sample = self.read_once()
            with self._lock:
                self.buffer.append(sample)
                listeners = list(self.listeners)
            for listener in listeners:
                with contextlib.suppress(Exception):
                    listener(sample)
            tick += 1
            next_at = start + tick * self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (a slow read): skip the missed ticks rather than bunch up
                skipped = int(-delay / self.interval) + 1
                tick += skipped
                self.missed += skipped
                delay = start + tick * self.interval - time.monotonic()
            time.sleep(delay)  # cheaper than Event.wait on a VM; stop() waits at most one interval

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        for source in self.gpus:
            source.close()

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self.listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self.listeners:
                self.listeners.remove(listener)

    def latest(self) -> Sample | None:
        with self._lock:
            return self.buffer[-1] if self.buffer else None

    def window(self, t0: float, t1: float) -> list[Sample]:
        """Samples taken between t0 and t1; if none fell inside, the nearest one on each side.

        Walks back from the newest sample and stops before t0: the app asks 4 times a second for the
        last minute, and the buffer holds an hour."""
        inside: list[Sample] = []
        before = after = None
        with self._lock:
            for sample in reversed(self.buffer):
                if sample.t > t1:
                    after = sample  # ends as the earliest one after t1
                elif sample.t >= t0:
                    inside.append(sample)
                else:
                    before = sample
                    break
        if inside:
            return inside[::-1]
        return [s for s in (before, after) if s is not None]
