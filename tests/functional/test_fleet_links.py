"""The fleet's inter-host links: the pairing schedule, the slow host or link named from pair figures,
the busbw arithmetic of a fleet figure, and real runs of three 'hosts' (threads here, each starting its
own gloo worker) on one TCPStore standing in for torchrun's, with a wrong element and a hang injected."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator

import psutil
import pytest
from rigcheck.engine.events import Event, LogLine, Measurement, Status, Verdict
from rigcheck.engine.fleet.links import (
    FleetLinksPlan,
    fleet_collectives,
    pair_schedule,
    pair_verdicts,
    pairwise_rounds,
)
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


@pytest.fixture(scope="module")
def store_port() -> Iterator[int]:
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)  # stands in for torchrun's
    yield store.port
    del store


def _workers() -> list[psutil.Process]:
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "links_worker" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def _fleet(
    port: int, prefix: str, call: Callable[[FleetLinksPlan], Iterator[Event]], hosts: int = 3, **options: object
) -> dict[int, list[Event]]:
    """Every host's events, the hosts run at once in threads as agents on three machines would."""
    out: dict[int, list[Event]] = {}

    def host(index: int) -> None:
        plan = FleetLinksPlan(
            "127.0.0.1", port, prefix, index, HOSTS, ("cpu",), (1, 1, 1), "gloo", ((MIB, 3),),
            **({"warmup": 1, "init_timeout": 60.0} | options),  # type: ignore[arg-type]
        )  # fmt: skip
        out[index] = list(call(plan))

    threads = [threading.Thread(target=host, args=(i,)) for i in range(hosts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(out) == list(range(hosts)) and not _workers()
    return out


def _verdicts(events: list[Event]) -> dict[str, list[Verdict]]:
    found: dict[str, list[Verdict]] = {}
    for event in events:
        if isinstance(event, Verdict):
            found.setdefault(event.check, []).append(event)
    return found


def test_three_hosts_check_every_element_and_host_0_reports_the_fleet_figures(store_port: int) -> None:
    out = _fleet(store_port, "run1/fleet-links/0", fleet_collectives, fault="wrong:2:all_gather")
    figures = {e.name: e for e in out[0] if isinstance(e, Measurement)}
    assert set(figures) == {"all_reduce 1 MiB busbw", "all_gather 1 MiB busbw", "reduce_scatter 1 MiB busbw"}
    for name, figure in figures.items():
        collective = name.split()[0]
        assert figure.stage == "fleet-links" and figure.value > 0 and figure.params["ranks"] == 3
        assert figure.params["hosts"] == list(HOSTS) and figure.params["bound"] == "link"
        assert figure.params["world"] == 3 and figure.params["backend"] == "gloo" and figure.params["timer"]
        assert figure.value == pytest.approx(figure.params["algbw"] * bus_factor(collective, 3))
        assert figure.params["wrong"] == (1 if collective == "all_gather" else 0)  # host 2's, seen from host 0
    assert not [e for e in out[1] + out[2] if isinstance(e, Measurement)]  # the fleet figure is counted once
    for index in range(3):
        checks = _verdicts(out[index])
        assert [v.status for v in checks["all_reduce 1 MiB"] + checks["reduce_scatter 1 MiB"]] == [Status.PASS] * 2
        expected = Status.FAIL if index == 2 else Status.PASS
        assert [v.status for v in checks["all_gather 1 MiB"]] == [expected]
    bad = _verdicts(out[2])["all_gather 1 MiB"][0]
    assert bad.numbers["rank"] == 2 and bad.numbers["host"] == "h2" and "on rank 2 (h2)" in bad.explanation
    assert bad.numbers["got"] == bad.numbers["expected"] + 1


def test_a_hung_rank_is_a_timeout_naming_it_on_its_host_and_named_by_the_others(store_port: int) -> None:
    out = _fleet(
        store_port, "run1/fleet-links/1", fleet_collectives, fault="hang:1:all_gather", step_timeout=2.0,
        collectives=("all_reduce", "all_gather"),
    )  # fmt: skip
    for index in range(3):
        ended = _verdicts(out[index])["collectives"]
        assert len(ended) == 1 and ended[0].numbers["ranks"] == [1] and ended[0].numbers["hosts"] == ["h1"]
        assert "rank 1 (h1)" in ended[0].explanation and ended[0].numbers["fleet_step"] == "all_gather 1 MiB"
        # The hung host always times out; a peer may instead see its socket closed once h1 kills its worker.
        assert ended[0].status in ((Status.TIMEOUT,) if index == 1 else (Status.TIMEOUT, Status.FAIL))


def test_pairwise_rounds_measure_each_healthy_pair_once_and_go_on_past_a_hung_one(store_port: int) -> None:
    out = _fleet(
        store_port, "run1/fleet-links/2", lambda plan: pairwise_rounds(plan, MIB, 3), fault="hang:2",
        step_timeout=2.0,
    )  # fmt: skip
    figures = [(i, e) for i in range(3) for e in out[i] if isinstance(e, Measurement)]
    assert [(i, f.name) for i, f in figures] == [(0, "pair all_reduce 1 MiB h0-h1")]  # from the lower host only
    figure = figures[0][1]
    assert figure.params["pair"] == ["h0", "h1"] and figure.params["busbw_gbs"] == figure.value > 0
    assert figure.value == pytest.approx(figure.params["algbw"])  # all_reduce on 2 ranks: factor 1
    hung = {(i, v.check, v.numbers["round"]) for i in range(3) for v in out[i] if isinstance(v, Verdict)}
    schedule = pair_schedule(3)
    rounds = {pair: r for r, pairs in enumerate(schedule) for pair in pairs}
    assert hung == {
        (0, "pair h0-h2", rounds[(0, 2)]),
        (2, "pair h0-h2", rounds[(0, 2)]),
        (1, "pair h1-h2", rounds[(1, 2)]),
        (2, "pair h1-h2", rounds[(1, 2)]),
    }
    for i in range(3):
        for verdict in (e for e in out[i] if isinstance(e, Verdict)):
            assert verdict.status == Status.TIMEOUT and verdict.numbers["hosts"] == ["h2"]
            assert verdict.explanation.startswith(f"pair round {verdict.numbers['round']} {verdict.check[5:]}: ")
        byes = [e.text for e in out[i] if isinstance(e, LogLine) and "bye" in e.text]
        assert len(byes) == 1  # a host with a bye goes on to its next round and its pair still forms


def test_a_pair_that_returns_wrong_elements_fails_on_that_host_and_a_clean_pair_does_not(store_port: int) -> None:
    out = _fleet(store_port, "run1/fleet-links/4", lambda plan: pairwise_rounds(plan, MIB, 2), fault="wrong:2")
    found = [(i, v) for i in range(3) for v in out[i] if isinstance(v, Verdict)]
    failed = {(i, v.check) for i, v in found}
    words = [(i, v.status, v.explanation) for i, v in found]
    assert failed == {(2, "pair h0-h2"), (2, "pair h1-h2")}, words  # h2 computes wrong; h0-h1 is clean
    for verdict in (e for e in out[2] if isinstance(e, Verdict)):
        assert verdict.status == Status.FAIL and verdict.numbers["host"] == "h2" and verdict.numbers["wrong"] > 0
        assert f"{verdict.numbers['wrong']} wrong element(s) on h2; first at " in verdict.explanation
        assert verdict.numbers["got"] != verdict.numbers["expected"]
    names = sorted(e.name for i in range(3) for e in out[i] if isinstance(e, Measurement))
    assert names == ["pair all_reduce 1 MiB h0-h1", "pair all_reduce 1 MiB h0-h2", "pair all_reduce 1 MiB h1-h2"]


def test_a_store_that_does_not_answer_fails_the_pairs_naming_it() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    plan = FleetLinksPlan("127.0.0.1", port, "run1/fleet-links/5", 0, HOSTS, ("cpu",), (1, 1, 1), "gloo",
                          ((MIB, 1),), init_timeout=2.0)  # fmt: skip
    found = [e for e in pairwise_rounds(plan, MIB, 1) if isinstance(e, Verdict)]
    assert [(v.check, v.status, v.numbers["round"]) for v in found] == [("pairs", Status.FAIL, 0)]
    assert found[0].explanation.startswith(f"pair round 0: the fleet's store at 127.0.0.1:{port} did not answer (")


def test_a_host_that_never_comes_is_named_once_forming_the_group_times_out(store_port: int) -> None:
    out = _fleet(store_port, "run1/fleet-links/3", fleet_collectives, hosts=2, init_timeout=8.0)  # h2 is lost
    for index in range(2):
        ended = _verdicts(out[index])["collectives"]
        assert [v.status for v in ended] == [Status.TIMEOUT] and ended[0].numbers["hosts"] == ["h2"]
        assert ended[0].explanation.startswith("forming the group hung: rank 2 (h2, never reached the store)")
        assert not [e for e in out[index] if isinstance(e, Measurement)]


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
