"""Where each profile's time goes, from a store and the shell's wall clocks (issue 42): per stage and per check,
start-up (command to first stage) and end (last stage to exit), rigcheck's own CPU-seconds, medians.

Reads the SQLite store directly (no rigcheck import), so it reads a store written by older code too.
Usage: python3 bench/profile_times.py STORE.db WALLS.tsv
WALLS.tsv: one line per command, "profile<TAB>i<TAB>start_epoch<TAB>end_epoch<TAB>rc" (bench/profile_times.sh).
A check's span is the time from the stage's previous verdict or figure (or its start) to it. CPU-s is the
CPU time of rigcheck and its children over the span (the run's 1 Hz telemetry, `own_cpus`, integrated), and
GPU% the mean utilisation the driver reported over it: a span with many CPU-s and a low GPU% waits on the host.
"""

from __future__ import annotations

import collections
import json
import sqlite3
import statistics
import sys
from dataclasses import dataclass, field


@dataclass
class RunTimes:
    """One command: its walls, its stages' and checks' spans, its host CPU use and its labels."""

    run_id: int
    profile: str
    wall: float
    in_store: float
    startup: float  # command start to the first stage's start
    end: float  # the last stage's end to the command's exit
    stages: dict[str, tuple[float, float, float | None]] = field(default_factory=dict)  # span, CPU-s, GPU%
    checks: dict[str, tuple[float, float]] = field(default_factory=dict)  # "stage/check": span, CPU-s
    labels: collections.Counter[str] = field(default_factory=collections.Counter)
    warns: list[str] = field(default_factory=list)  # "stage/check: words" of each WARN or FAIL, to read what it was


def read_walls(path: str) -> list[tuple[str, float, float, int]]:
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 5:
                rows.append((parts[0], float(parts[2]), float(parts[3]), int(parts[4])))
    return rows


class Samples:
    """The run's telemetry: (t, own CPUs, mean GPU utilisation or None), in time order."""

    def __init__(self, db: sqlite3.Connection, run_id: int) -> None:
        self.rows: list[tuple[float, float, float | None]] = []
        for t, data in db.execute("SELECT t, data FROM samples WHERE run_id = ? ORDER BY t", (run_id,)):
            sample = json.loads(data)
            own = (sample.get("host") or {}).get("own_cpus") or 0.0
            utils = [g["utilization_pct"] for g in sample.get("gpus") or [] if g.get("utilization_pct") is not None]
            self.rows.append((t, own, statistics.fmean(utils) if utils else None))

    def cpu_seconds(self, start: float, end: float) -> float:
        """own_cpus x the part of each sample's interval (the time since the one before) inside [start, end]."""
        total, previous = 0.0, None
        for t, own, _ in self.rows:
            if previous is not None:
                overlap = min(t, end) - max(previous, start)
                if overlap > 0:
                    total += own * overlap
            previous = t
        return total

    def gpu_pct(self, start: float, end: float) -> float | None:
        values = [u for t, _, u in self.rows if start <= t <= end + 1.0 and u is not None]
        return statistics.fmean(values) if values else None


def run_times(db: sqlite3.Connection, run_id: int, profile: str, start: float, exit_: float) -> RunTimes:
    started, finished = db.execute("SELECT started, finished FROM runs WHERE id = ?", (run_id,)).fetchone()
    stages = list(
        db.execute(
            "SELECT name, started, finished FROM stages WHERE run_id = ? AND started IS NOT NULL ORDER BY started",
            (run_id,),
        )
    )
    samples = Samples(db, run_id)
    first = min((s for _, s, _ in stages), default=started)
    last = max((f for _, _, f in stages if f), default=finished or started)
    times = RunTimes(run_id, profile, exit_ - start, (finished or started) - started, first - start, exit_ - last)
    for name, s, f in stages:
        if f:
            times.stages[name] = (f - s, samples.cpu_seconds(s, f), samples.gpu_pct(s, f))
    marks = db.execute(
        "SELECT stage, check_name, t FROM verdicts WHERE run_id = ? UNION ALL "
        "SELECT stage, name, t FROM measurements WHERE run_id = ? ORDER BY t",
        (run_id, run_id),
    )
    previous = {name: s for name, s, _ in stages}
    for stage, check, t in marks:
        if stage in previous and t is not None:
            key = f"{stage}/{check}"
            span = t - previous[stage]
            old = times.checks.get(key, (0.0, 0.0))  # a check named twice (one per device): summed
            times.checks[key] = (old[0] + span, old[1] + samples.cpu_seconds(previous[stage], t))
            previous[stage] = t
    for (conditions,) in db.execute("SELECT conditions FROM measurements WHERE run_id = ?", (run_id,)):
        times.labels[(json.loads(conditions or "{}") or {}).get("trust", "none")] += 1
    for status, stage, check, words in db.execute(
        "SELECT status, stage, check_name, explanation FROM verdicts WHERE run_id = ?", (run_id,)
    ):
        times.labels[status] += 1
        if status in ("WARN", "FAIL"):
            times.warns.append(f"{status} {stage}/{check}: {str(words)[:220]}")
    return times


def match_runs(db: sqlite3.Connection, walls: list[tuple[str, float, float, int]]) -> list[RunTimes]:
    """Each command's run: the stored run that started between the command's start and its exit."""
    found = []
    runs = list(db.execute("SELECT id, started, profile FROM runs ORDER BY id"))
    for profile, start, end, _ in walls:
        hit = next((r for r in runs if start <= r[1] <= end), None)
        if hit is not None:
            found.append(run_times(db, hit[0], hit[2] or profile, start, end))
    return found


def median(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f}" if values else "     -"


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


def print_profile(profile: str, runs: list[RunTimes]) -> None:
    print(f"\n== profile {profile}: {len(runs)} run(s)")
    for r in runs:
        bad = {k: r.labels[k] for k in ("SUSPECT", "WARN", "FAIL", "INCONCLUSIVE", "BROKEN") if r.labels[k]}
        print(
            f"   run {r.run_id}: wall {r.wall:5.1f} s, in store {r.in_store:5.1f}, start-up {r.startup:4.1f}, "
            f"end {r.end:4.1f}; {sum(r.labels[k] for k in ('TRUSTED', 'NOISY', 'SUSPECT', 'none'))} figures "
            f"(TRUSTED {r.labels['TRUSTED']}, NOISY {r.labels['NOISY']}, SUSPECT {r.labels['SUSPECT']}); "
            f"WARN {r.labels['WARN']}" + (f"; {bad}" if bad else "")
        )
        for line in r.warns:
            print(f"      {line}")
    print(
        f"   median wall {median([r.wall for r in runs]).strip()} s ({spread([r.wall for r in runs])}), "
        f"in store {median([r.in_store for r in runs]).strip()}, start-up {median([r.startup for r in runs]).strip()}, "
        f"end {median([r.end for r in runs]).strip()}"
    )
    print(f"   {'stage':12}{'median s':>9}{'range':>12}{'CPU-s':>8}{'GPU%':>6}")
    names = list(dict.fromkeys(n for r in runs for n in r.stages))
    for name in names:
        spans = [r.stages[name][0] for r in runs if name in r.stages]
        cpus = [r.stages[name][1] for r in runs if name in r.stages]
        gpus = [g for r in runs if name in r.stages and (g := r.stages[name][2]) is not None]
        gpu = f"{statistics.median(gpus):6.0f}" if gpus else "     -"
        print(f"   {name:12}{median(spans):>9}{spread(spans):>12}{median(cpus):>8}{gpu}")
    print(f"   {'check (span from the previous event of its stage)':52}{'median s':>9}{'CPU-s':>8}")
    keys = list(dict.fromkeys(k for r in runs for k in r.checks))
    for key in keys:
        spans = [r.checks[key][0] for r in runs if key in r.checks]
        if statistics.median(spans) >= 0.2:  # the rest is in the stage's total
            cpus = [r.checks[key][1] for r in runs if key in r.checks]
            print(f"   {key[:52]:52}{median(spans):>9}{median(cpus):>8}")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 bench/profile_times.py STORE.db WALLS.tsv", file=sys.stderr)
        return 2
    db = sqlite3.connect(argv[0])
    runs = match_runs(db, read_walls(argv[1]))
    by_profile: dict[str, list[RunTimes]] = collections.defaultdict(list)
    for r in runs:
        by_profile[r.profile].append(r)
    for profile, group in by_profile.items():
        print_profile(profile, group)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
