"""The CPU's second clock is the wall clock (CLOCK_REALTIME), outside perf_counter's monotonic family;
an NTP step of it is "the second clock stepped", never a broken timer."""

from __future__ import annotations

import time

import pytest
import torch
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.stages.common.figures import timing_params
from rigcheck.engine.stages.common.timing import time_calls

HOST = ("perf_counter", "CLOCK_REALTIME")


def test_cpu_figures_are_checked_by_the_wall_clock() -> None:
    a = torch.randn(64, 64)
    stats = time_calls(lambda: a @ a, torch.device("cpu"), min_reps=5, min_seconds=0.05)
    assert (stats.primary, stats.check) == HOST
    assert len(stats.check_times) == len(stats.times) and stats.disagreement() is None


def test_a_step_of_the_wall_clock_is_a_step_not_a_broken_timer() -> None:
    times = tuple([0.005] * 12)
    back = (0.005,) * 5 + (-0.7,) + (0.005,) * 6  # NTP stepped the clock back 0.7 s inside one call
    forward = (0.005,) * 3 + (3600.005,) + (0.005,) * 8  # or an hour forward
    for checks in (back, forward):
        stats = TimingStats(times, checks, *HOST)
        assert stats.disagreement() is None
        note = stats.check_stepped()
        assert note is not None and note.startswith("the second clock stepped: CLOCK_REALTIME jumped during 1 of 12")
        assert timing_params(stats)["check_stepped"] == note
    clean = TimingStats(times, tuple([0.00502] * 12), *HOST)
    assert clean.disagreement() is None and clean.check_stepped() is None


def test_a_monotonic_family_running_slow_is_two_clocks_that_disagree() -> None:
    # perf_counter's family at half speed: every call reads half the wall clock's time
    halved = TimingStats(tuple([0.005] * 12), tuple([0.010] * 12), *HOST)
    reason = halved.disagreement()
    assert reason is not None and reason.startswith(
        "two host clocks disagree (perf_counter 5 ms, CLOCK_REALTIME 10 ms)"
    )
    # nearly stopped: every timing looks like a jump, which is no step (steps are rare), but a fault
    stopped = TimingStats(tuple([0.0001] * 12), tuple([0.2] * 12), *HOST)
    assert stopped.check_stepped() is None and stopped.disagreement() is not None


def test_two_calls_one_preempted_between_its_clock_reads_is_no_broken_timer() -> None:
    # a 1 MiB gloo all_reduce timed twice on a busy host: the second call's thread was preempted between its
    # two end reads, so the wall clock read 3 ms more (under the step's 50 ms); the first call agrees
    for checks in ((0.00501, 0.008), (0.008, 0.00501), (0.002, 0.00501)):
        assert TimingStats((0.005, 0.005), checks, *HOST).disagreement() is None, checks
    # both calls disagree, one just over the 1% + 50 us allowance: a clock that runs slow moves both middle calls
    assert TimingStats((0.005, 0.005), (0.010, 0.0101), *HOST).disagreement() is not None
    edge = 0.005 * 1.0106 + 50e-6  # 0.005 read longer by 1% of itself plus 50 us, and a little more
    assert TimingStats((0.005, 0.005), (edge, edge), *HOST).disagreement() is not None
    inside = 0.005 + 0.0099 * 0.005 + 50e-6
    assert TimingStats((0.005, 0.005), (inside, inside), *HOST).disagreement() is None
    # an odd count still takes the median: two of three calls preempted is a disagreement
    assert TimingStats((0.005,) * 3, (0.005, 0.008, 0.008), *HOST).disagreement() is not None


def test_a_read_of_both_clocks_preempted_between_them_is_taken_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.stages.common import timing

    delays = [0.02, 0.0]  # the first read's thread is preempted for 20 ms between its two clocks, the next is not

    def slow_clock() -> float:
        time.sleep(delays.pop(0) if delays else 0.0)
        return time.clock_gettime(time.CLOCK_REALTIME)

    monkeypatch.setattr(timing, "check_clock", slow_clock)
    before = time.perf_counter()
    perf, real = timing.both_clocks()
    # the second try was kept: its perf_counter is after the 20 ms stall, and the pair is one instant
    assert perf - before >= 0.02 and not delays
    assert abs((time.clock_gettime(time.CLOCK_REALTIME) - real) - (time.perf_counter() - perf)) < 0.015  # not 0.02
    # a read whose two perf_counter reads are just inside the allowance is kept; just outside, it is read again
    inside, outside = timing.PAIR_READ_S * 0.99, timing.PAIR_READ_S * 1.01
    for perf_reads, kept in (([1.0, 1.0 + inside], 1.0 + inside / 2), ([1.0, 1.0 + outside, 2.0, 2.0], 2.0)):
        script = iter(perf_reads)
        assert timing.both_clocks(perf=lambda s=script: next(s))[0] == pytest.approx(kept), perf_reads


def test_a_training_figure_whose_end_read_was_preempted_keeps_agreeing_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.stages import training
    from rigcheck.engine.stages.common import timing

    reads = iter([0.0, 0.03])  # the start's read, then the end's, preempted for 30 ms once between its clocks

    def clock() -> float:
        time.sleep(next(reads, 0.0))
        return time.clock_gettime(time.CLOCK_REALTIME)

    monkeypatch.setattr(timing, "check_clock", clock)
    monkeypatch.setattr(training, "check_clock", clock, raising=False)
    _rate, _steps, _start, extras = training.train_rate(8, 8, "fp32", torch.device("cpu"), max_seconds=0.3)
    assert extras["timer_disagrees"] is None
