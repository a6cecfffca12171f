"""Others' load on the run's CPU set is taken over the window, not clamped sample by sample: /proc/stat and
/proc/PID/stat can count rigcheck's own ticks in neighbouring 0.1 s samples, and clamping each sample at zero
only ever adds. On a one-CPU set with nothing else on it that read 0.05-0.08 CPU, the floor that makes a figure
SUSPECT (found by the mutation audit's quiet-CPU test, 2026-12-03)."""

from __future__ import annotations

from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.engine.trust.summary import summarise


def window(busy: list[float], own: list[float]) -> list[Sample]:
    hosts = [
        HostSample(2, 0.5, busy_cpus=b, own_cpus=o, set_cpus=1, set_busy_cpus=b) for b, o in zip(busy, own, strict=True)
    ]
    return [Sample(1000.0 + i / 10, host, ()) for i, host in enumerate(hosts)]


def test_own_ticks_counted_in_the_next_sample_are_no_one_elses_load() -> None:
    # the set was busy 12 ticks in all and rigcheck's own were 12: the two counts disagree sample by sample only
    busy = [0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0]
    own = [0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2]
    assert summarise(window(busy, own), None)["cpu_set_others_cpus"] == 0.0


def test_a_real_neighbour_on_the_set_is_still_counted() -> None:
    busy = [1.0] * 10
    own = [0.5] * 10  # half the one CPU went to someone else the whole window
    assert summarise(window(busy, own), None)["cpu_set_others_cpus"] == 0.5


def test_just_above_and_below_the_floor_read_as_they_are() -> None:
    assert summarise(window([0.56] * 5, [0.5] * 5), None)["cpu_set_others_cpus"] == 0.06
    assert summarise(window([0.54] * 5, [0.5] * 5), None)["cpu_set_others_cpus"] == 0.04
