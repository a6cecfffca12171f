"""The store's schema, as the migrations that build it one version at a time (schema.py applies them)."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # version 1
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
        exit_code INTEGER, host TEXT, pid INTEGER, device TEXT, profile TEXT, python TEXT,
        stages TEXT, argv TEXT, fingerprint TEXT
    );
    CREATE TABLE stages (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
        status TEXT NOT NULL, started REAL, finished REAL, exit_code INTEGER, pid INTEGER,
        python TEXT, log_path TEXT, UNIQUE (run_id, name)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT, kind TEXT NOT NULL,
        t REAL NOT NULL, payload TEXT NOT NULL
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, name TEXT NOT NULL,
        value REAL, unit TEXT, spread REAL, repeats INTEGER, device TEXT, params TEXT,
        conditions TEXT, fingerprint TEXT, t REAL
    );
    CREATE TABLE verdicts (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, check_name TEXT,
        status TEXT NOT NULL, explanation TEXT, numbers TEXT, tolerance REAL, device TEXT, t REAL
    );
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, data TEXT NOT NULL
    );
    CREATE TABLE fingerprints (digest TEXT PRIMARY KEY, basis TEXT NOT NULL, first_seen REAL);
    CREATE INDEX events_run ON events(run_id);
    CREATE INDEX measurements_run ON measurements(run_id);
    CREATE INDEX verdicts_run ON verdicts(run_id);
    """,
    # version 2: telemetry kept at about 1 Hz during a run, for the contention report
    """
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, t REAL NOT NULL, data TEXT NOT NULL
    );
    CREATE INDEX samples_run ON samples(run_id);
    """,
    # version 3: the GPUs a run holds (one run per GPU) and why a run ended in error
    """
    ALTER TABLE runs ADD COLUMN gpus TEXT;
    ALTER TABLE runs ADD COLUMN error TEXT;
    """,
    # version 4: fleet runs hold every host's results; '' is the run's own host. A stage is one row per host.
    """
    ALTER TABLE runs ADD COLUMN fleet TEXT;
    ALTER TABLE events ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE measurements ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE verdicts ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE facts ADD COLUMN host TEXT NOT NULL DEFAULT '';
    CREATE TABLE stages_by_host (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
        status TEXT NOT NULL, started REAL, finished REAL, exit_code INTEGER, pid INTEGER,
        python TEXT, log_path TEXT, host TEXT NOT NULL DEFAULT '', UNIQUE (run_id, host, name)
    );
    INSERT INTO stages_by_host (id, run_id, name, status, started, finished, exit_code, pid, python, log_path)
        SELECT id, run_id, name, status, started, finished, exit_code, pid, python, log_path FROM stages;
    DROP TABLE stages;
    ALTER TABLE stages_by_host RENAME TO stages;
    """,
    # version 5: a run made with --strict (a WARN fails it); its exit_code is then the one it returned
    """
    ALTER TABLE runs ADD COLUMN strict INTEGER NOT NULL DEFAULT 0;
    """,
    # version 6: where the run's control socket is, so any caller finds it whatever its environment
    """
    ALTER TABLE runs ADD COLUMN control TEXT;
    """,
]
