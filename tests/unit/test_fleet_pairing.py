"""The fleet's inter-host pairing, worked out without a network: the schedule of pair rounds, the slow host or
link named from pair figures (with their cause, and noisy pairs left out), and the busbw arithmetic of a fleet
figure."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.fleet.links import FleetLinksPlan, pair_schedule, pair_verdicts
from rigcheck.engine.measure.busbw import bus_factor
from rigcheck.engine.stages.links.collectives import StepResult

MIB = 2**20
HOSTS = ("h0", "h1", "h2")

# --- the schedule -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(2, 10))
def test_every_pair_meets_once_and_no_host_twice_in_a_round(n: int) -> None:
    rounds = pair_schedule(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    met = [pair for pairs in rounds for pair in pairs]
    assert sorted(met) == list(itertools.combinations(range(n), 2))  # each pair exactly once, (low, high)
    for pairs in rounds:
        busy = [h for pair in pairs for h in pair]
        assert len(busy) == len(set(busy))
        assert len(pairs) == n // 2  # every host plays each round but the one with a bye


@pytest.mark.parametrize("n", [17, 64, 1024, 1025])
def test_past_a_size_a_fixed_number_of_sampled_rounds_each_host_meeting_distinct_peers(n: int) -> None:
    from rigcheck.engine.fleet.pairs import SAMPLED_ROUNDS

    rounds = pair_schedule(n)
    assert len(rounds) == SAMPLED_ROUNDS and rounds == pair_schedule(n)  # every host computes the same
    met = [pair for pairs in rounds for pair in pairs]
    assert len(met) == len(set(met))  # no pair twice
    for pairs in rounds:
        busy = [h for pair in pairs for h in pair]
        assert len(busy) == len(set(busy)) and len(pairs) == n // 2
    peers = {h: {b if a == h else a for a, b in met if h in (a, b)} for h in range(n)}
    assert min(len(p) for p in peers.values()) >= SAMPLED_ROUNDS - 1  # a bye at most, for an odd fleet


def test_a_slow_host_is_named_from_sampled_pairs_in_a_fleet_of_1024() -> None:
    figures = [
        Measurement(
            "fleet-links", f"pair {a}-{b}", 50.0 if 700 in (a, b) else 100.0 + (a * b) % 7, "GB/s",
            params={"pair": [f"h{a}", f"h{b}"], "bytes": 64 * MIB},
        )
        for pairs in pair_schedule(1024)
        for a, b in pairs
    ]  # fmt: skip
    started = time.monotonic()
    verdicts = pair_verdicts(figures)
    assert time.monotonic() - started < 30  # well under a second on an idle machine
    assert [(host, v.check) for host, v in verdicts] == [("h700", "slow host h700")]


def test_a_fleet_of_one_has_nothing_to_pair_and_none_is_refused() -> None:
    assert pair_schedule(1) == [[]]
    with pytest.raises(ValueError, match="at least one host"):
        pair_schedule(0)


# --- naming the slow host or link ---------------------------------------------------------------


def _pairs(n: int, speed: Callable[[int, int], float], size: int = 64 * MIB) -> list[Measurement]:
    return [
        Measurement(
            "fleet-links", f"pair {a}-{b}", speed(a, b), "GB/s", params={"pair": [f"h{a}", f"h{b}"], "bytes": size}
        )
        for a, b in itertools.combinations(range(n), 2)
    ]


@pytest.mark.parametrize("n", [3, 4, 6])
def test_a_host_slow_with_every_peer_is_named_and_no_link_is_blamed(n: int) -> None:
    figures = _pairs(n, lambda a, b: 50.0 if 2 in (a, b) else 100.0)
    verdicts = pair_verdicts(figures)
    assert [(host, v.status, v.check) for host, v in verdicts] == [("h2", Status.WARN, "slow host h2")]
    warned = verdicts[0][1]
    assert warned.numbers["reference_gbs"] == 100.0
    assert set(warned.numbers["pairs"]) == {f"h{i}" for i in range(n) if i != 2}
    assert "with h0 50.00 GB/s" in warned.explanation


@pytest.mark.parametrize("n", [3, 4, 5])
def test_one_slow_pair_is_the_link_between_its_hosts_not_a_slow_host(n: int) -> None:
    figures = _pairs(n, lambda a, b: 60.0 if (a, b) == (0, 1) else 100.0)
    verdicts = pair_verdicts(figures)
    assert [(host, v.status, v.check) for host, v in verdicts] == [("", Status.WARN, "slow link h0-h1")]
    assert verdicts[0][1].numbers["pair"] == ["h0", "h1"] and "40% below" in verdicts[0][1].explanation


def test_even_pairs_pass_and_too_few_pairs_say_nothing() -> None:
    verdicts = pair_verdicts(_pairs(4, lambda a, b: 100.0 - a - b), tolerance=0.10)
    assert [(host, v.status) for host, v in verdicts] == [("", Status.PASS)]
    assert "6 pairs of 4 hosts compared" in verdicts[0][1].explanation
    assert pair_verdicts(_pairs(2, lambda a, b: 5.0)) == []
    broken = _pairs(3, lambda a, b: 100.0)
    broken[0] = Measurement("fleet-links", "x", 1.0, "GB/s", params={"pair": ["h0", "h1"], "broken": "clocks"})
    assert [v.status for _, v in pair_verdicts(broken)] == [Status.PASS]  # a broken figure is not evidence


# --- the fleet figure's arithmetic --------------------------------------------------------------


def test_fleet_figure_is_busbw_over_every_rank_of_every_host() -> None:
    from rigcheck.engine.fleet.links import figure_events

    # 3 hosts x 2 ranks; slowest rank per call 4, 2, 3 ms: median 3 ms. 64 MiB all_reduce on 6 ranks:
    # algbw 67108864 / 0.003 = 22.37 GB/s, busbw x 2*5/6 = 37.28 GB/s (nccl-tests).
    result = StepResult(
        "all_reduce", 64 * MIB, 6, (0.004, 0.002, 0.003), 0, {}, "perf_counter", "CLOCK_MONOTONIC_RAW", None, None, 2
    )
    events = list(figure_events(result, "cpu", {"hosts": list(HOSTS), "bound": "link"}, "all_reduce 64 MiB busbw"))
    figure = next(e for e in events if isinstance(e, Measurement))
    assert figure.stage == "fleet-links" and figure.name == "all_reduce 64 MiB busbw"
    assert figure.params["algbw"] == pytest.approx(64 * MIB / 0.003 / 1e9)
    assert figure.value == pytest.approx(37.28, abs=0.01)
    assert figure.value == pytest.approx(figure.params["algbw"] * bus_factor("all_reduce", 6))
    assert figure.params["wrong"] == 2  # every host's wrong elements, not only this host's
    gather = StepResult("all_gather", 64 * MIB, 6, (0.003,), 0, {}, "perf_counter", "CLOCK_MONOTONIC_RAW", None)
    value = next(e for e in figure_events(gather, "cpu", {}) if isinstance(e, Measurement)).value
    assert value == pytest.approx(64 * MIB / 0.003 / 1e9 * 5 / 6)


def test_a_plan_that_does_not_add_up_is_refused() -> None:
    good = {"store_host": "127.0.0.1", "store_port": 1, "prefix": "p", "hosts": HOSTS, "backend": "gloo", "sizes": ()}
    with pytest.raises(ValueError, match="brings 2 devices"):
        FleetLinksPlan(host_index=1, local_devices=("cpu", "cpu"), device_counts=(1, 1, 1), **good)
    with pytest.raises(ValueError, match="host_index 3"):
        FleetLinksPlan(host_index=3, local_devices=("cpu",), device_counts=(1, 1, 1), **good)
    plan = FleetLinksPlan(host_index=2, local_devices=("cpu", "cpu"), device_counts=(2, 1, 2), **good)
    assert (plan.world, plan.offset, plan.host_of(2), plan.host_of(4)) == (5, 3, "h1", "h2")


# --- real runs: three hosts on one store --------------------------------------------------------


def test_a_slow_host_from_pairs_names_the_cause_and_noisy_pairs_are_not_compared() -> None:
    from rigcheck.engine.events import Measurement
    from rigcheck.engine.fleet.pairs import pair_verdicts

    def pair(a: str, b: str, value: float, trust: str = "TRUSTED", reasons: tuple[str, ...] = ()) -> Measurement:
        conditions = {"trust": trust, "trust_reasons": list(reasons)}
        params = {"pair": [a, b], "bytes": 1 << 22}
        return Measurement(
            "fleet-links", f"pair all_reduce 4 MiB {a}-{b}", value, "GB/s", params=params, conditions=conditions
        )

    busy = ("other processes kept 1.5 of 2 CPUs busy",)
    slow = [
        pair("a", "b", 10.0),
        pair("a", "c", 4.0, "SUSPECT", busy),
        pair("b", "c", 4.5),
        pair("a", "d", 10.0),
        pair("b", "d", 10.0),
        pair("c", "d", 4.2),
    ]
    [(host, verdict)] = [(h, v) for h, v in pair_verdicts(slow) if v.status.value == "WARN"]
    assert host == "c" and busy[0] in verdict.explanation
    noisy = [
        pair(a, b, v, "NOISY") if "c" in (a, b) else pair(a, b, v)
        for a, b, v in (
            ("a", "b", 10.0),
            ("a", "c", 4.0),
            ("b", "c", 4.5),
            ("a", "d", 10.0),
            ("b", "d", 10.0),
            ("c", "d", 4.2),
        )
    ]
    assert [v.status.value for _, v in pair_verdicts(noisy)] == ["PASS"]
