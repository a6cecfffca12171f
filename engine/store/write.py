"""Writing runs to the store: a run's row, each event as it arrives, and telemetry samples (a run's end: run_end)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from typing import Any

from rigcheck.engine.events import (
    Event,
    Facts,
    Fingerprint,
    Measurement,
    RunFinished,
    StageFinished,
    StageStarted,
    Verdict,
    event_kind,
    event_to_dict,
)
from rigcheck.engine.store.errors import StoreError, StoreLocked, is_full, is_locked, is_refused_write
from rigcheck.engine.store.liveness import process_alive
from rigcheck.engine.store.run_end import RunEnd, RunEnds
from rigcheck.engine.store.schema import BUSY_TIMEOUT_S, _dumps


class StoreWriter(RunEnds):
    """The writing half of the store; every write goes through the base class's lock."""

    def begin_run(
        self, stages: list[str], device: str, profile: str, python: str, argv: list[str], gpus: tuple[str, ...] = ()
    ) -> int:
        """A run's row, whoever else holds its devices (tests and tools; the engine uses claim_run)."""
        run_id, _ = self.claim_run(stages, device, profile, python, argv, gpus or (device,), force=True)
        assert run_id is not None
        return run_id

    def claim_run(
        self,
        stages: list[str],
        device: str,
        profile: str,
        python: str,
        argv: list[str],
        devices: tuple[str, ...],
        force: bool = False,
        strict: bool = False,
    ) -> tuple[int | None, list[dict[str, Any]]]:
        """Begin a run unless a live run holds one of `devices` (then None and those runs), in one
        transaction so two engines starting at once cannot both take a device. With `force` the run
        begins anyway and the runs it shares a device with are still returned. `strict`: asked with --strict (kept
        with the run from its start: its exit code is the engine's, --strict applied)."""
        self.need_write()
        with self._lock, self._damage_said():
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if not is_locked(error):
                    raise
                raise StoreLocked(
                    f"store {self.path} is held by another process (waited {BUSY_TIMEOUT_S:.0f} s); "
                    "nothing was run: try again once it lets go"
                ) from None
            try:
                taken = self._holders(devices)
                if taken and not force:
                    self._db.execute("ROLLBACK")
                    return None, taken
                run_id = self._db.execute(
                    "INSERT INTO runs (started, status, host, pid, device, profile, python, stages, argv, gpus, strict)"
                    " VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        time.time(),
                        socket.gethostname(),
                        os.getpid(),
                        device,
                        profile,
                        python,
                        _dumps(stages),
                        _dumps(argv),
                        _dumps(list(devices)),
                        int(strict),
                    ),
                ).lastrowid
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:  # SQLite itself rolls back on a full disk
                    self._db.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and is_full(error):
                    raise StoreError(
                        f"store {self.path} is on a full disk: the run could not be begun and nothing was run; "
                        "free some space or point --store elsewhere"
                    ) from None
                if isinstance(error, sqlite3.OperationalError) and is_refused_write(error):
                    raise StoreError(
                        f"store {self.path} cannot be written ({error}), though its mode allows it: it may be "
                        "append-only or immutable (`lsattr` shows, `chattr -a` clears); nothing was run"
                    ) from None
                raise
        return run_id, taken

    def begin_fleet_run(
        self, stages: list[str], profile: str, python: str, argv: list[str], fleet: dict[str, Any]
    ) -> int:
        """Rank 0's fleet run: it holds every host's results, and no device of this host (its own local run does)."""
        run_id = self.begin_run(stages, "fleet", profile, python, argv, gpus=(f"fleet:{fleet.get('id', '')}",))
        self.update_fleet(run_id, fleet)
        return run_id

    def record_control(self, run_id: int, path: str) -> None:
        """Where the run's engine listens for control requests (its socket's path)."""
        self._write("UPDATE runs SET control = ? WHERE id = ?", (path, run_id))

    def update_fleet(self, run_id: int, fleet: dict[str, Any]) -> None:
        """The fleet's hosts and their states (joined, done, lost) as rank 0 last saw them."""
        self._write("UPDATE runs SET fleet = ? WHERE id = ?", (_dumps(fleet), run_id))

    def _holders(self, devices: tuple[str, ...], but: int | None = None) -> list[dict[str, Any]]:
        """Live runs on this host holding any of `devices` (called with the lock held)."""
        host = socket.gethostname()
        found = []
        for row in self._db.execute("SELECT * FROM runs WHERE status = 'running' AND id IS NOT ?", (but,)):
            held = set(json.loads(row["gpus"] or "[]") or [row["device"]])
            if row["host"] == host and held & set(devices) and process_alive(row["pid"], row["started"]):
                found.append(dict(row))
        return found

    def sharing_runs(self, run_id: int, devices: tuple[str, ...]) -> list[int]:
        """Other live runs that hold one of this run's devices now (only ever with --force)."""
        with self._lock:
            return [row["id"] for row in self._holders(devices, but=run_id)]

    def record(self, run_id: int, event: Event, host: str = "") -> None:
        """Write one event as it arrives, plus its row in the table made for its kind. `host` names the
        fleet host it came from ('' for the run's own host). One transaction: refused whole or written whole."""
        with self.transaction():
            self._record(run_id, event, host)

    def _record(self, run_id: int, event: Event, host: str) -> None:
        stage = getattr(event, "stage", None)
        self._write(
            "INSERT INTO events (run_id, stage, kind, t, payload, host) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, stage, event_kind(event), event.t, _dumps(event_to_dict(event)), host),
        )
        if isinstance(event, StageStarted):
            self._write(
                "INSERT INTO stages (run_id, name, status, started, pid, python, host)"
                " VALUES (?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (run_id, host, name) DO UPDATE SET"
                " status = 'running', started = excluded.started, pid = excluded.pid",
                (run_id, event.stage, event.t, event.pid, event.python, host),
            )
        elif isinstance(event, StageFinished):
            self._write(
                "INSERT INTO stages (run_id, name, status, finished, exit_code, log_path, host)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, host, name) DO UPDATE SET"
                " status = excluded.status, finished = excluded.finished,"
                " exit_code = excluded.exit_code, log_path = excluded.log_path",
                (run_id, event.stage, event.status.value, event.t, event.exit_code, event.log_path, host),
            )
        elif isinstance(event, Verdict):
            self._write(
                "INSERT INTO verdicts (run_id, stage, check_name, status, explanation, numbers,"
                " tolerance, device, t, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    event.stage,
                    event.check,
                    event.status.value,
                    event.explanation,
                    _dumps(event.numbers),
                    event.tolerance,
                    event.device,
                    event.t,
                    host,
                ),
            )
        elif isinstance(event, Measurement):
            self._write(
                "INSERT INTO measurements (run_id, stage, name, value, unit, spread, repeats, device,"
                " params, conditions, fingerprint, t, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " (SELECT fingerprint FROM runs WHERE id = ?), ?, ?)",
                (
                    run_id,
                    event.stage,
                    event.name,
                    event.value,
                    event.unit,
                    event.spread,
                    event.repeats,
                    event.device,
                    _dumps(event.params),
                    _dumps(event.conditions),
                    run_id,
                    event.t,
                    host,
                ),
            )
        elif isinstance(event, Facts):
            self._write(
                "INSERT INTO facts (run_id, stage, data, host) VALUES (?, ?, ?, ?)",
                (run_id, event.stage, _dumps(event.data), host),
            )
        elif isinstance(event, Fingerprint):
            self._write(
                "INSERT OR IGNORE INTO fingerprints (digest, basis, first_seen) VALUES (?, ?, ?)",
                (event.digest, _dumps(event.basis), event.t),
            )
            # the run's first fingerprint stands; a later stage that differs is a finding (see runner)
            if not host:  # another host's environment is compared across the fleet, not made this run's
                self._write(
                    "UPDATE runs SET fingerprint = ? WHERE id = ? AND fingerprint IS NULL", (event.digest, run_id)
                )
        elif isinstance(event, RunFinished) and not host:
            self.write_end(run_id, RunEnd(event.status, event.exit_code))

    def interrupt_host_stages(self, run_id: int, host: str) -> None:
        """A lost fleet host's stages that were running when it was lost."""
        self._write(
            "UPDATE stages SET status = 'INTERRUPTED' WHERE run_id = ? AND host = ? AND status = 'running'",
            (run_id, host),
        )

    def record_sample(self, run_id: int, t: float, data: dict[str, Any]) -> None:
        self._write("INSERT INTO samples (run_id, t, data) VALUES (?, ?, ?)", (run_id, t, _dumps(data)))
