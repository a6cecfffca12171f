"""Training's steps in chunks: at least three, and a figure whose chunks disagree runs on to the ceiling."""

from __future__ import annotations

import itertools
import time

import pytest
import torch
from rigcheck.engine.stages import training


def test_a_figure_has_at_least_three_chunks_and_says_so() -> None:
    rate, steps, _start, extras = training.train_rate(8, 8, "fp32", torch.device("cpu"), max_seconds=0.5)
    assert extras["chunks"] >= training.MIN_CHUNKS and steps >= extras["chunks"]
    assert rate > 0 and extras["chunk_spread"] is not None and extras["timer_disagrees"] is None


def test_chunks_that_disagree_keep_the_figure_going_to_its_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    real_loss = training.loss_fn
    # every third step stalls, so any three chunks of one step hold a stall and never agree (a cycle of four left
    # three stall-free chunks in a row, which agree on a quiet host and stopped the figure early). The stall is long
    # beside a step even on a loaded host (0.06 s failed once under load: a slow step made it a small share)
    pauses = itertools.cycle([0.0, 0.0, 0.3])

    def stalling_loss(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(next(pauses))
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(training, "loss_fn", stalling_loss)
    monkeypatch.setattr(training, "CHUNK_S", 1e-6)  # one step a chunk
    started = time.perf_counter()
    _rate, _steps, _start, extras = training.train_rate(
        8, 8, "fp32", torch.device("cpu"), max_seconds=3.0
    )  # room for 4+ chunks on a slow, busy host
    assert time.perf_counter() - started >= 3.0  # never stopped early on agreeing chunks
    # ran to its ceiling (above) on chunks that disagreed; on a busy host a step may take long enough that only
    # the minimum of chunks fits in it
    assert extras["chunks"] >= training.MIN_CHUNKS and extras["chunk_spread"] > 0.5
