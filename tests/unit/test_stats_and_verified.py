"""Timing statistics (a noisy measurement is reported as noisy) and the unverified mark on figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rigcheck.engine.events import Fingerprint, Measurement, StageFinished, StageStarted, Status
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import RunPlan
from rigcheck.engine.run.session import RunSession
from rigcheck.engine.store import Store
from rigcheck.engine.trust.conditions import judge
from stage_infos import fake


def test_steady_timings_are_not_noisy() -> None:
    stats = TimingStats((1.00, 1.01, 0.99, 1.00, 1.02, 1.00, 0.99, 1.01))
    assert stats.median == pytest.approx(1.0) and stats.best == 0.99
    assert not stats.noisy
    median, best, spread = stats.rate(10.0)
    assert median == pytest.approx(10.0) and best == pytest.approx(10.0 / 0.99)
    assert spread == pytest.approx(median * stats.spread)


def test_a_noisy_measurement_is_reported_as_noisy() -> None:
    stats = TimingStats((1.0, 1.3, 0.8, 1.5, 0.9, 1.2, 1.0, 1.4))
    assert stats.noisy and stats.spread > 0.05
    median, _, spread = stats.rate(100.0)
    quiet = {"samples": 5, "window_s": 0.4, "host_cpus": 8, "host_others_cpus": 0.0}
    judged = judge(quiet, Measurement("matmul", "x", median, "GFLOP/s", spread))
    assert judged.trust == "NOISY" and judged.reasons[0].startswith("timing spread")


def fingerprinted(store: Store, run_id: int, digest: str) -> None:
    store.record(run_id, Fingerprint("probe", digest, {}))


def run_timed(store: Store, tmp_path: Path, run_id: int) -> dict:
    session = RunSession(store, RunPlan(run_id, RunRequest((fake("timed"),)), tmp_path / str(run_id)))
    session.start()
    assert session.wait(60)
    return store.report(run_id)["measurements"][0]["conditions"]


def test_figures_are_unverified_until_verify_passes_for_the_same_fingerprint(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    first = store.begin_run(["timed"], "cpu", "quick", sys.executable, [])
    fingerprinted(store, first, "aaaa")
    assert run_timed(store, tmp_path, first)["verified"] is False

    store.record(first, StageStarted("verify", "cpu", 1, "python"))
    store.record(first, StageFinished("verify", Status.PASS, 0))
    later = store.begin_run(["timed"], "cpu", "quick", sys.executable, [])
    fingerprinted(store, later, "aaaa")
    assert run_timed(store, tmp_path, later)["verified"] is True

    other = store.begin_run(["timed"], "cpu", "quick", sys.executable, [])
    fingerprinted(store, other, "bbbb")  # another environment: the old Verify does not count
    assert run_timed(store, tmp_path, other)["verified"] is False
