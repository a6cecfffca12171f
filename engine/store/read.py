"""Reading runs back from the store: lists, one run's report, and the figures later runs compare against.

Nothing here writes: a run cut off by a dead engine is marked when a rigcheck process starts
(StoreWriter.sweep_dead_runs), not when someone looks.
"""

from __future__ import annotations

import json
import socket
import statistics
from typing import Any

from rigcheck.engine.events import Trust, worst
from rigcheck.engine.store.errors import StoreDamaged
from rigcheck.engine.store.inert import inert_report
from rigcheck.engine.store.liveness import process_alive
from rigcheck.engine.store.sane import sane_row, time_of
from rigcheck.engine.store.schema import StoreBase
from rigcheck.engine.trust.contention import contention_report
from rigcheck.engine.trust.judgement import trust_in

DURATION_RUNS = 5  # a stage's expected time is the median of its last this-many runs


def _unlistable(run: dict[str, Any]) -> str | None:
    """Why a runs row cannot be listed (its stages are not a JSON list of names, it has no start time), or None."""
    try:
        stages = json.loads(run["stages"] or "[]")
    except ValueError:
        return "its stage list in the store is not valid JSON"
    if not isinstance(stages, list) or not all(isinstance(name, str) for name in stages):
        return "its stage list in the store is not a list of names"
    if time_of(run["started"]) is None:
        return "its start time in the store is not a time (not a number, or beyond the calendar)"
    return None


def _shown(run: dict[str, Any]) -> dict[str, Any]:
    """A runs row as front ends list it: its numbers sane, its text inert, its stage names (JSON) inert one by one
    (an escape written as \\u001b in the JSON is text until it is parsed)."""
    row = inert_report(sane_row(run))
    try:
        stages = json.loads(row.get("stages") or "[]")
    except ValueError:
        return row
    if isinstance(stages, list):
        row["stages"] = json.dumps([inert_report(name) for name in stages])
    return row


class StoreReader(StoreBase):
    unlisted: tuple[str, ...] = ()  # what the last `runs()` left out, and why

    def samples(self, run_id: int) -> list[dict[str, Any]]:
        rows = self._read("SELECT data FROM samples WHERE run_id = ? ORDER BY t", (run_id,))
        return [json.loads(row["data"]) for row in rows]

    def earlier_clean_clocks(self, run_id: int, name: str, gpu_uuid: str, limit: int = 20) -> list[float]:
        """The mean SM clock of this figure on this GPU (by UUID) in earlier runs where it was TRUSTED."""
        rows = self._read(
            "SELECT params, conditions FROM measurements WHERE name = ? AND run_id < ? ORDER BY id DESC LIMIT ?",
            (name, run_id, 5 * limit),
        )
        clocks = []
        for row in rows:
            params, conditions = json.loads(row["params"] or "{}"), json.loads(row["conditions"] or "{}")
            clock = conditions.get("sm_clock_mean_mhz")
            if params.get("gpu_uuid") == gpu_uuid and trust_in(conditions) is Trust.TRUSTED and clock:
                clocks.append(float(clock))
        return clocks[:limit]

    def verified(self, run_id: int, device: str) -> bool:
        """Has Verify passed for this device in this run, or in an earlier one with the same fingerprint?"""
        rows = self._read(
            "SELECT 1 FROM stages s JOIN runs r ON s.run_id = r.id WHERE s.name = 'verify'"
            " AND s.status IN ('PASS', 'WARN') AND r.fingerprint IS NOT NULL"
            " AND r.fingerprint = (SELECT fingerprint FROM runs WHERE id = ?)"
            " AND (r.device IN (?, 'all') OR ',' || r.device || ',' LIKE '%,' || ? || ',%') LIMIT 1",
            (run_id, device, device),
        )
        return bool(rows)

    def is_live(self, run: dict[str, Any]) -> bool:
        """Is this run's engine still at work on it (on this host)?"""
        return (
            run["status"] == "running"
            and run["host"] == socket.gethostname()
            and process_alive(run["pid"], run["started"])
        )

    def live_runs(self) -> list[dict[str, Any]]:
        """Runs whose engine is still running, newest first."""
        rows = self._read("SELECT * FROM runs WHERE status = 'running' ORDER BY id DESC")
        return [dict(row) for row in rows if self.is_live(dict(row))]

    def runs(self, limit: int = 50, without_profile: str | None = None) -> list[dict[str, Any]]:
        """The newest runs (less those of `without_profile`), less any whose row cannot be shown (`unlisted` then
        says which and why), so one damaged row never hides every other run."""
        if without_profile is None:
            rows = self._read("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self._read(
                "SELECT * FROM runs WHERE profile IS NULL OR profile != ? ORDER BY id DESC LIMIT ?",
                (without_profile, limit),
            )
        listed, unlisted = [], []
        for row in map(dict, rows):
            problem = _unlistable(row)
            if problem:
                unlisted.append(f"run {row['id']} left out: {problem}")
            else:
                listed.append(_shown(row))
        self.unlisted = tuple(unlisted)
        return listed

    def run(self, run_id: int) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        return sane_row(dict(rows[0])) if rows else None

    def latest_probe(self) -> tuple[dict[str, Any], str | None, list[str]] | None:
        """The newest Probe facts, that run's fingerprint, and Probe's non-PASS explanations."""
        rows = self._read(
            "SELECT f.run_id, f.data, r.fingerprint FROM facts f JOIN runs r ON r.id = f.run_id"
            " WHERE f.stage = 'probe' AND f.host = '' ORDER BY f.id DESC LIMIT 1"
        )
        if not rows:
            return None
        warnings = self._read(
            "SELECT explanation FROM verdicts WHERE run_id = ? AND stage = 'probe' AND status != 'PASS' ORDER BY id",
            (rows[0]["run_id"],),
        )
        return json.loads(rows[0]["data"]), rows[0]["fingerprint"], [w["explanation"] for w in warnings]

    def latest_run_id(self) -> int | None:
        rows = self._read("SELECT max(id) FROM runs")
        return rows[0][0] if rows else None

    def _table(self, table: str, run_id: int) -> list[dict[str, Any]]:
        rows = self._read(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id", (run_id,))
        return [sane_row(dict(row)) for row in rows]

    def stage_rows(self, run_id: int) -> list[dict[str, Any]]:
        """A run's stages, one row per host and stage (a fleet run's hosts each have theirs)."""
        return self._table("stages", run_id)

    def report(self, run_id: int) -> dict[str, Any] | None:
        """Everything the store holds for one run, as plain data (the source of every export); StoreDamaged
        (one line) where a value the store wrote as JSON no longer is."""
        try:
            return inert_report(self._report(run_id))  # stored text is untrusted: no escape reaches a terminal
        except json.JSONDecodeError as error:
            raise StoreDamaged(
                f"store {self.path}: run {run_id} is damaged (a value stored as JSON no longer is: {error}); "
                "the other runs are not affected"
            ) from None

    def _report(self, run_id: int) -> dict[str, Any] | None:
        run = self.run(run_id)
        if run is None:
            return None
        for key in ("stages", "argv"):
            run[key] = json.loads(run[key] or "[]")
        basis = None
        if run["fingerprint"]:
            rows = self._read("SELECT basis FROM fingerprints WHERE digest = ?", (run["fingerprint"],))
            basis = json.loads(rows[0]["basis"]) if rows else None
        decoded = {"numbers", "params", "conditions", "data"}

        def rows_of(table: str) -> list[dict[str, Any]]:
            out = self._table(table, run_id)
            for row in out:
                for key in decoded & row.keys():
                    row[key] = json.loads(row[key] or "null")
            return out

        measurements = rows_of("measurements")
        samples = self.samples(run_id)
        facts = rows_of("facts")
        host_facts: dict[str, dict[str, Any]] = {}  # a fleet run's facts, host by host
        for row in facts:
            if row["host"]:
                host_facts.setdefault(row["host"], {})[row["stage"]] = row["data"]
        return {
            "run": run,
            "fingerprint": {"digest": run["fingerprint"], "basis": basis},
            "stages": rows_of("stages"),
            "verdicts": rows_of("verdicts"),
            "measurements": measurements,
            "facts": {row["stage"]: row["data"] for row in facts if not row["host"]},
            "host_facts": host_facts,
            "fleet": json.loads(run["fleet"]) if run.get("fleet") else None,
            "telemetry_samples": len(samples),
            "contention": contention_report(samples, measurements),
        }

    def host_fingerprints(self, run_id: int) -> dict[str, tuple[str, dict[str, Any]]]:
        """A fleet run's environment fingerprint of each host: (digest, basis) of its first Fingerprint event."""
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        rows = self._read(
            "SELECT host, payload FROM events WHERE run_id = ? AND kind = 'Fingerprint' AND host != '' ORDER BY id",
            (run_id,),
        )
        for row in rows:
            if row["host"] not in found:
                payload = json.loads(row["payload"])
                found[row["host"]] = (str(payload.get("digest")), dict(payload.get("basis") or {}))
        return found

    def worst_statuses(self, run_ids: list[int]) -> dict[int, str]:
        """Each run's most severe verdict (CRASH over TIMEOUT over FAIL over WARN over PASS over SKIP).

        A run without any verdict is absent from the answer.
        """
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        rows = self._read(
            f"SELECT DISTINCT run_id, status FROM verdicts WHERE run_id IN ({marks})",
            tuple(run_ids),
        )
        found: dict[int, list[str]] = {}
        for row in rows:
            found.setdefault(row["run_id"], []).append(row["status"])
        return {run_id: status.value for run_id, statuses in found.items() if (status := worst(statuses))}

    def stage_durations(self, device: str, profile: str, last: int = DURATION_RUNS) -> dict[str, float]:
        """Each stage's median wall time over its last few finished runs on this device and profile.

        Only stages that ran to their end count (PASS, NOT JUDGED, WARN, INCONCLUSIVE or FAIL), and a SKIP the
        stage itself gave in a complete run (links or health on a CPU host: it will skip there again, as fast): a
        crash, a timeout or a cancel (its SKIP is the runner's "stage" verdict) says nothing about how long the
        stage takes.
        """
        rows = self._read(
            "SELECT s.name, s.finished - s.started AS seconds FROM stages s JOIN runs r ON r.id = s.run_id"
            " WHERE r.device = ? AND r.profile = ? AND s.started IS NOT NULL AND ("
            " (s.status IN ('PASS', 'NOT JUDGED', 'WARN', 'INCONCLUSIVE', 'FAIL') AND s.finished > s.started)"
            " OR (s.status = 'SKIP' AND r.status = 'complete' AND s.finished >= s.started"
            "  AND EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = s.run_id AND v.stage = s.name"
            "   AND v.status = 'SKIP' AND v.check_name != 'stage')"
            "  AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = s.run_id AND v.stage = s.name"
            "   AND v.check_name = 'stage')))"
            " ORDER BY s.id DESC LIMIT 1000",
            (device, profile),
        )
        recent: dict[str, list[float]] = {}
        for row in rows:
            times = recent.setdefault(row["name"], [])
            if len(times) < last:
                times.append(row["seconds"])
        return {name: statistics.median(times) for name, times in recent.items()}
