"""A fleet's hosts against each other: the slow GPU and the slow host named by the within-host peer rule (off the
median of the others) with the cause from their conditions (INCONCLUSIVE where it is someone else's load),
and a host whose probe differs from the majority flagged."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.fleet.compare_hosts import fleet_peer_verdicts
from rigcheck.engine.fleet.probe_differences import probe_differences
from rigcheck.engine.trust.peers import PEER_TOLERANCE, comparable, peer_verdicts

H200 = "NVIDIA H200"
HOSTS = ("a", "b", "c")


def conditions(gpu_index: int | None, **extra: Any) -> dict[str, Any]:
    """Conditions as ConditionsAnnotator fills them: host load, the GPU's clocks, and the trust verdict."""
    out: dict[str, Any] = {
        "samples": 12,
        "window_s": 1.2,
        "host_cpus": 16,
        "host_others_cpus": 0.1,
        "host_own_cpus": 1.0,
        "host_load1": 1.1,
        "host_top_others": [],
        "cpu_mhz_mean": 3100.0,
        "trust": "TRUSTED",
        "trust_reasons": [],
        "notes": [],
        "widened": False,
    }
    if gpu_index is not None:
        out |= {
            "gpu_index": gpu_index,
            "gpu_name": H200,
            "sm_clock_mean_mhz": 1960.0,
            "sm_clock_max_mhz": 1980,
            "clock_ratio": 0.99,
            "utilization_mean_pct": 99.0,
            "throttle": ["power cap"],
            "other_gpu_processes": [],
        }
    return out | extra


def timing(timer: str, check: str, **extra: Any) -> dict[str, Any]:
    """What figures.checked adds from the timing statistics."""
    return {
        "timer": timer,
        "timer_check": check,
        "median_s": 2e-4,
        "spread_rel": 0.01,
        "noisy": False,
        "launch_bound": False,
        "broken": None,
        "limit": None,
        "limit_basis": "no limit known for this device",
    } | extra


def matmul(device: str, value: float, dtype: str = "bf16", size: int = 4096, **cond: Any) -> Measurement:
    """As matmul.measure_point reports it: TFLOP/s on a GPU timed by events, GFLOP/s on the CPU."""
    gpu = device.startswith("cuda")
    params = {
        "dtype": dtype,
        "m": size,
        "n": size,
        "k": size,
        "library": "torch",
        "best": value,
        "bound": "compute" if gpu else "host",
        "threads": 1 if gpu else 16,
        "benchmark_version": "rigcheck-bench-2",
    } | (timing("events", "wall clock") if gpu else timing("perf_counter", "CLOCK_MONOTONIC_RAW"))
    if gpu:
        params |= {"pci_bus_id": f"0000:{int(device[5:]) + 0x18:02x}:00.0", "gpu_uuid": f"GPU-{device}"}
    index = int(device[5:]) if gpu else None
    unit = "TFLOP/s" if gpu else "GFLOP/s"
    return Measurement(
        "matmul", f"matmul {dtype} {size}", value, unit, value * 0.01, 40, device, params, conditions(index, **cond)
    )


def device_copy(device: str, value: float, **cond: Any) -> Measurement:
    params = {"bytes": 2.0 * 2**32, "direction": "d2d", "bound": "memory", "peak": 4800.0} | timing("events", "wall")
    return Measurement("bandwidth", "device copy 4 GiB", value, "GB/s", 5.0, 20, device, params, conditions(0, **cond))


def host_copy(value: float, **cond: Any) -> Measurement:
    """bandwidth.cpu_bandwidth's figure: bound by the host, one thread."""
    params = {"bytes": 2.0 * 2**28, "direction": "host", "bound": "host", "threads": 1} | timing(
        "perf_counter", "CLOCK_MONOTONIC_RAW"
    )
    return Measurement("bandwidth", "host memory copy 256 MiB", value, "GB/s", 0.2, 20, "cpu", params, conditions(None))


def train(device: str, value: float, **cond: Any) -> Measurement:
    """training.one's figure: no timing statistics, its own clock check, threads on the CPU."""
    gpu = device.startswith("cuda")
    params = {
        "channels": 128,
        "batch": 1024,
        "precision": "fp32",
        "compiled": False,
        "steps": 30,
        "bound": "compute" if gpu else "host",
        "parameters": 1_800_000,
        "threads": 1 if gpu else 16,
        "broken": None,
        "limit": None,
    }
    index = int(device[5:]) if gpu else None
    return Measurement(
        "training", "train c128 b1024 fp32", value, "samples/s", None, 30, device, params, conditions(index, **cond)
    )


def gpu_fleet(per_host: int = 4, base: float = 780.0) -> list[tuple[str, Measurement]]:
    """A clean fleet: every GPU within 2% of the others."""
    return [
        (host, matmul(f"cuda:{i}", base * (1.0 - 0.005 * ((h + i) % 4))))
        for h, host in enumerate(HOSTS)
        for i in range(per_host)
    ]


def swap(figures: list[tuple[str, Measurement]], host: str, device: str, new: Measurement) -> list[tuple[str, Any]]:
    return [(h, new if (h, m.device, m.name) == (host, device, new.name) else m) for h, m in figures]


def warns(verdicts: list[tuple[str, Verdict]]) -> list[tuple[str, Verdict]]:
    return [(h, v) for h, v in verdicts if v.status == Status.WARN]


def test_a_slow_gpu_is_named_with_its_host_and_the_cause_from_its_conditions() -> None:
    clean = gpu_fleet()
    ((host, summary),) = fleet_peer_verdicts(clean)
    assert host == "" and summary.status == Status.PASS
    assert summary.explanation.startswith("3 hosts compared: 1 GPU figure(s) across every GPU of the same model")
    assert f"none more than {PEER_TOLERANCE:.0%} off the median of its peers" in summary.explanation

    best = max(m.value for _, m in clean)
    value = best * 0.87
    hot = ["power cap", "hardware thermal slowdown"]
    slow = matmul(
        "cuda:3",
        value,
        sm_clock_mean_mhz=1540.0,
        throttle=hot,
        trust="SUSPECT",
        trust_reasons=["clocks held back by hardware thermal slowdown"],
    )
    verdicts = fleet_peer_verdicts(swap(clean, "b", "cuda:3", slow))
    ((host, warn),) = warns(verdicts)
    assert host == "b" and warn.device == "cuda:3" and warn.stage == "fleet"
    middle = statistics.median(m.value for h, m in clean if (h, m.device) != ("b", "cuda:3"))
    assert warn.explanation.startswith(
        f"b cuda:3 matmul bf16 4096 {value:,.4g} TFLOP/s, {1 - value / middle:.0%} below the median of its 11 "
        f"peers across the fleet ({middle:,.4g}, MAD "
    )
    assert "; likely cause: thermal slowdown; next: " in warn.explanation  # the board's own heat: judged
    assert warn.numbers["peer_count"] == 11 and warn.numbers["median"] == middle and warn.numbers["best"] == best
    assert verdicts[-1][0] == "" and "1 GPU figure(s) and 0 host(s) named" in verdicts[-1][1].explanation

    # a GPU a few percent low is within the tolerance
    close = fleet_peer_verdicts(swap(clean, "b", "cuda:3", matmul("cuda:3", best * 0.95)))
    assert warns(close) == []


def test_the_slow_host_is_named_with_its_worst_figure_and_the_cause_from_its_conditions() -> None:
    busy = {
        "host_others_cpus": 14.0,
        "trust": "SUSPECT",
        "trust_reasons": ["other processes kept 14.0 of 16 CPUs busy while this figure needed 1: stress (pid 4242)"],
    }

    def host_figures(host: str, scale: float, **cond: Any) -> list[tuple[str, Measurement]]:
        out: list[tuple[str, Measurement]] = []
        for i in range(2):
            out += [
                (host, matmul(f"cuda:{i}", 780.0 * scale, **cond)),
                (host, matmul(f"cuda:{i}", 730.0 * scale, dtype="fp16", **cond)),
                (host, train(f"cuda:{i}", 103_000.0 * scale, **cond)),
                (host, device_copy(f"cuda:{i}", 4250.0)),  # memory-bound: not slowed by the host
            ]
        return out

    clean = [*host_figures("a", 1.0), *host_figures("b", 0.98), *host_figures("c", 0.99)]
    assert warns(fleet_peer_verdicts(clean)) == []

    scale = 0.8
    fleet = [*host_figures("a", 1.0), *host_figures("b", 0.98), *host_figures("c", scale, **busy)]
    verdicts = fleet_peer_verdicts(fleet)
    ((host, named),) = [(h, v) for h, v in verdicts if v.check == "fleet-host"]
    assert host == "c" and named.status == Status.INCONCLUSIVE  # someone else's load: it says nothing of host c
    assert named.explanation.startswith(
        "c is the slow host: 3 of its 4 compared figure(s) more than 10% below the other hosts' median"
    )
    assert " below their median " in named.explanation
    assert f"; could not be judged: {busy['trust_reasons'][0]}; next: " in named.explanation
    # its GPUs, each below the median of the fleet's, are named too (could not be judged); the device copies are not
    unjudged = [(h, v) for h, v in verdicts if v.status == Status.INCONCLUSIVE and v.check != "fleet-host"]
    assert warns(verdicts) == []
    assert sorted((h, v.device, v.numbers["stage"]) for h, v in unjudged) == [
        ("c", f"cuda:{i}", stage) for i in range(2) for stage in ("matmul", "matmul", "training")
    ]

    # slow in one figure of four is a slow GPU figure, not the slow host
    one_slow = [
        (h, replace(m, value=m.value * 0.8) if h == "c" and m.name == "matmul fp16 4096" else m) for h, m in clean
    ]
    assert [v.check for _, v in warns(fleet_peer_verdicts(one_slow))] == ["fleet-peers matmul fp16 4096"] * 2


def cpu_fleet(slow_host: str | None = None, scale: float = 1.0, **cond: Any) -> list[tuple[str, Measurement]]:
    """A CPU-only fleet, with the figures of the matmul, bandwidth and training stages on the CPU."""
    out: list[tuple[str, Measurement]] = []
    for host in HOSTS:
        s, c = (scale, cond) if host == slow_host else (1.0, {})
        out += [
            (host, matmul("cpu", 1450.0 * s, dtype="fp32", size=1024, **c)),
            (host, matmul("cpu", 610.0 * s, dtype="bf16", size=1024, **c)),
            (host, replace(host_copy(11.5 * s), conditions=conditions(None, **c))),
            (host, train("cpu", 1800.0 * s, **c)),
        ]
    return out


def test_a_cpu_only_fleet_compares_its_hosts_by_their_cpu_figures() -> None:
    clean = cpu_fleet()
    # within a host these measure the host, not a GPU; across hosts the host is what is compared
    assert not any(comparable(m) for _, m in clean)
    ((_, summary),) = fleet_peer_verdicts(clean)
    assert summary.status == Status.PASS and "0 GPU figure(s)" in summary.explanation
    assert "4 figure(s) host against host" in summary.explanation and "CPU figures by name" in summary.explanation

    reason = "other processes kept 1.0 of 2 CPUs busy while this figure needed 2: burn (pid 77, 1.0 CPUs)"
    slow = cpu_fleet("b", 0.6, host_others_cpus=1.0, trust="SUSPECT", trust_reasons=[reason])
    ((host, named),) = [(h, v) for h, v in fleet_peer_verdicts(slow) if v.status != Status.PASS]
    assert host == "b" and named.check == "fleet-host" and named.device == "" and named.status == Status.INCONCLUSIVE
    assert named.explanation.startswith("b is the slow host: 4 of its 4 compared figure(s)")
    assert (
        "(on its CPU), 40% below" in named.explanation and f"could not be judged: {reason}; next: " in named.explanation
    )
    # the same figures, measured clean, are judged: the slow host is a WARN
    ((_, clean_slow),) = [(h, v) for h, v in fleet_peer_verdicts(cpu_fleet("b", 0.6)) if v.status != Status.PASS]
    assert clean_slow.status == Status.WARN and "likely cause: " in clean_slow.explanation

    # a host with another CPU model has no peers: the two alike are compared, b is not
    models = {"a": "AMD EPYC 9654", "b": "Intel Xeon 6430", "c": "AMD EPYC 9654"}
    apart = fleet_peer_verdicts(slow, cpu_models=models)
    assert warns(apart) == [] and "CPU figures by CPU model" in apart[-1][1].explanation


def test_a_host_slow_mostly_through_someone_elses_load_is_inconclusive_whatever_its_worst_clean_figure() -> None:
    """b is slow in all 4 figures; 3 were disturbed (30% below), 1 clean is the worst (50% below). Slow in most only
    counting the disturbed, b is INCONCLUSIVE on those, never a WARN from the one clean figure; where the clean are
    the most (3 of 4), the WARN stands."""
    reason = "other processes kept 1.0 of 2 CPUs busy while this figure needed 2: burn (pid 77, 1.0 CPUs)"
    busy = {"host_others_cpus": 1.0, "trust": "SUSPECT", "trust_reasons": [reason]}

    def worst_one_clean(clean_names: set[str]) -> list[tuple[str, Measurement]]:
        mixed = cpu_fleet("b", 0.7, **busy)
        calm = {m.name: m for h, m in cpu_fleet("b", 0.7) if h == "b"}  # the same figures, measured clean
        out = [(h, calm[m.name] if h == "b" and m.name in clean_names else m) for h, m in mixed]
        return [(h, replace(m, value=725.0) if h == "b" and m.name == "matmul fp32 1024" else m) for h, m in out]

    ((host, named),) = [(h, v) for h, v in fleet_peer_verdicts(worst_one_clean({"matmul fp32 1024"})) if v.status
                        != Status.PASS]  # fmt: skip
    assert host == "b" and named.status == Status.INCONCLUSIVE, named.explanation
    assert "worst matmul fp32 1024" not in named.explanation and "30% below" in named.explanation
    assert f"could not be judged: {reason}; next: " in named.explanation
    most_clean = worst_one_clean({"matmul fp32 1024", "matmul bf16 1024", "train c128 b1024 fp32"})
    assert {v.status for h, v in fleet_peer_verdicts(most_clean) if h == "b"} == {Status.WARN}


def test_unsound_figures_are_not_compared_across_hosts() -> None:
    clean = gpu_fleet()
    low = min(m.value for _, m in clean) * 0.7
    for unsound in (
        matmul("cuda:3", low, trust="NOISY"),
        matmul("cuda:3", low, trust="BROKEN"),
        matmul("cuda:3", low, trust="UNJUDGED"),
        replace(matmul("cuda:3", low), params=matmul("cuda:3", low).params | {"broken": "timers disagree"}),
        replace(matmul("cuda:3", low), params=matmul("cuda:3", low).params | {"launch_bound": True}),
    ):
        assert warns(fleet_peer_verdicts(swap(clean, "b", "cuda:3", unsound))) == []
    assert warns(fleet_peer_verdicts(swap(clean, "b", "cuda:3", matmul("cuda:3", low))))  # the same figure, sound
    noisy_cpu = cpu_fleet("b", 0.5, trust="NOISY")
    assert warns(fleet_peer_verdicts(noisy_cpu)) == []


def test_one_host_gives_nothing_and_the_within_host_rule_is_unchanged() -> None:
    one = [(h, m) for h, m in gpu_fleet() if h == "a"]
    slowed = [("a", replace(m, value=m.value * 0.5) if m.device == "cuda:1" else m) for _, m in one]
    assert fleet_peer_verdicts(slowed) == [] and fleet_peer_verdicts([]) == []
    assert [v.device for v in peer_verdicts([m for _, m in slowed], "matmul") if v.status == Status.WARN] == ["cuda:1"]


def probe_facts(
    driver: str = "580.159", torch: str = "2.13.0+cu130", cuda: str | None = "13.0", gpus: int = 8
) -> dict[str, Any]:
    """The dict Probe's Facts event carries, with the keys build_facts and driver_facts fill."""
    build = {
        "torch": torch,
        "dnn_version_text": "9.19.0",
        "cuda": cuda,
        "hip": None,
        "build": "CUDA" if cuda else "CPU-only",
        "dnn_library": "cuDNN",
        "dnn_version": 91900,
        "arch_list": ["sm_90"],
        "blas_info": "mkl",
        "num_threads": 16,
    }
    devices = [{"index": i, "name": H200, "vendor": "NVIDIA", "arch": "sm_90"} for i in range(gpus)]
    return {
        "interpreter": {"executable": "/opt/venv/bin/python", "version": "3.12.3", "implementation": "CPython"},
        "torch": build,
        "numpy": "2.3.1",
        "driver": {"vendor": "NVIDIA", "version": driver, "nvml": {"driver_version": driver}},
        "devices": devices,
        "no_gpu_reason": None,
        "cpu": {"model": "AMD EPYC 9654", "usable_cpus": 192},
        "blas": [],
        "environment": {},
    }


def fingerprint(host: str, **changes: Any) -> tuple[str, dict[str, Any]]:
    basis = {
        "host": host,
        "cpu": "AMD EPYC 9654",
        "python": "CPython 3.12.3",
        "executable": "/opt/venv/bin/python",
        "torch": "2.13.0+cu130",
        "cuda": "13.0",
        "hip": None,
        "dnn": 91900,
        "driver": "580.159",
        "numpy": "2.3.1",
        "blas": [["openblas", "0.3.29", "SkylakeX"]],
        "devices": [[H200, "sm_90", 150_000_000_000]] * 8,
        "env": {},
    } | changes
    return f"digest-{host}", basis


SIX = [f"node{i}" for i in range(6)]


def test_a_host_whose_driver_or_torch_differs_from_the_majority_is_flagged() -> None:
    prints = {h: fingerprint(h) for h in SIX}
    ((host, same),) = probe_differences({h: probe_facts() for h in SIX}, prints)
    assert host == "" and same.status == Status.PASS and same.check == "fleet-probe"
    for item in ("driver 580.159", "torch 2.13.0+cu130", "CUDA build", "CUDA 13.0", "cuDNN 9.19.0", "8 GPU(s)"):
        assert item in same.explanation
    assert "environment fingerprint" in same.explanation  # the host names differ, by construction, and pass

    facts = {h: probe_facts() for h in SIX} | {"node3": probe_facts(driver="570.86")}
    ((host, warn),) = probe_differences(facts, prints)
    assert host == "node3" and warn.status == Status.WARN and warn.stage == "fleet"
    assert warn.explanation == "driver 570.86 here, 580.159 on 5 of 6 hosts"

    facts = {h: probe_facts() for h in SIX} | {"node5": probe_facts(torch="2.12.1+cu128", cuda="12.8", gpus=7)}
    found = probe_differences(facts, prints)
    assert [h for h, _ in found] == ["node5"] * 3
    assert [v.explanation for _, v in found] == [
        "torch 2.12.1+cu128 here, 2.13.0+cu130 on 5 of 6 hosts",
        "CUDA 12.8 here, CUDA 13.0 on 5 of 6 hosts",
        "7 GPU(s) here, 8 on 5 of 6 hosts",
    ]


def test_a_fingerprint_basis_key_that_differs_is_named() -> None:
    prints = {h: fingerprint(h) for h in SIX} | {"node2": fingerprint("node2", env={"OMP_NUM_THREADS": "1"})}
    ((host, warn),) = probe_differences({h: probe_facts() for h in SIX}, prints)
    assert host == "node2" and warn.numbers["keys"] == ["env"]
    assert warn.explanation.startswith("environment fingerprint differs from 5 of 6 hosts in env (")
    assert "OMP_NUM_THREADS" in warn.explanation


def test_the_odd_host_is_set_against_a_majority_host_whatever_the_digests_sort_to() -> None:
    """The first host in name order is the odd one, and its digest sorts after the majority's: the reference
    must still be a majority host (a `>=` where `==` belongs picked the odd host itself, naming nothing)."""
    from rigcheck.engine.facts.fingerprint import digest

    major = {"torch": "2.13.0", "numpy": "2.1"}
    odd = next(
        {"torch": "2.13.0", "numpy": f"2.{n}"}
        for n in range(2, 200)
        if digest({"torch": "2.13.0", "numpy": f"2.{n}"}) > digest(major)
    )
    prints = {"a": ("x", odd), "b": ("y", dict(major)), "c": ("y", dict(major))}
    [(host, warn)] = [(h, v) for h, v in probe_differences({}, prints) if "fingerprint" in v.explanation]
    assert host == "a" and warn.numbers["keys"] == ["numpy"]
    assert (
        warn.explanation
        == f'environment fingerprint differs from 2 of 3 hosts in numpy ("{odd["numpy"]}" against "2.1")'
    )


def test_a_two_two_split_is_a_mixed_fleet_naming_the_groups() -> None:
    four = SIX[:4]
    facts = {h: probe_facts(driver="570.86" if h in ("node0", "node2") else "580.159") for h in four}
    prints = {h: fingerprint(h) for h in four}
    ((host, mixed),) = probe_differences(facts, prints)
    assert host == "" and mixed.status == Status.WARN
    assert "mixed fleet" in mixed.explanation and "driver 570.86 on node0, node2" in mixed.explanation
    assert "driver 580.159 on node1, node3" in mixed.explanation
    assert mixed.numbers["groups"] in (
        [["node0", "node2"], ["node1", "node3"]],
        [["node1", "node3"], ["node0", "node2"]],
    )

    split = {h: fingerprint(h, driver="570.86" if h in ("node0", "node2") else "580.159") for h in four}
    ((_, mixed_print),) = probe_differences({h: probe_facts() for h in four}, split)
    assert mixed_print.explanation.startswith("mixed fleet, no majority for the environment fingerprint")
    assert " in driver (" in mixed_print.explanation


def test_a_host_whose_probe_did_not_report_is_flagged_and_one_host_gives_nothing() -> None:
    facts = {h: probe_facts() for h in SIX} | {"node4": {}}
    prints = {h: fingerprint(h) for h in SIX if h != "node4"}
    found = probe_differences(facts, prints)
    assert [(h, v.status) for h, v in found] == [("node4", Status.WARN)] * 2
    assert "did not report" in found[0][1].explanation and "no environment fingerprint" in found[1][1].explanation
    assert probe_differences({"node0": probe_facts(driver="1")}, {"node0": fingerprint("node0")}) == []


def test_two_slow_hosts_are_not_each_called_the_slow_host() -> None:
    reason = "other processes kept 1.0 of 2 CPUs busy while this figure needed 2: burn (pid 77, 1.0 CPUs)"
    cond = {"host_others_cpus": 1.0, "trust": "SUSPECT", "trust_reasons": [reason]}
    both = [(h, m) for h, m in cpu_fleet("b", 0.6, **cond) if h != "c"]
    both += [(h, m) for h, m in cpu_fleet("c", 0.7, **cond) if h == "c"]
    # two more healthy hosts: with the median of the others, two slow of three could be either way round
    both += [(extra, m) for h, m in cpu_fleet() if h == "a" for extra in ("d", "e")]
    found = fleet_peer_verdicts(both)
    named = sorted((h, v.explanation) for h, v in found if v.check == "fleet-host")
    assert {v.status for _, v in found if v.check == "fleet-host"} == {Status.INCONCLUSIVE}  # disturbed: unjudged
    assert [h for h, _ in named] == ["b", "c"]
    assert all(text.startswith(f"{h} is one of 2 slow hosts: ") for h, text in named), named
    assert not any("the slow host" in text for _, text in named)


def stored(host: str, m: Measurement) -> dict[str, Any]:
    """A figure as rank 0's store gives it back: a row with its host (unit and time may be empty)."""
    return {"host": host, "stage": m.stage, "name": m.name, "value": m.value, "unit": m.unit or None,
            "spread": m.spread, "repeats": m.repeats, "device": m.device, "params": m.params,
            "conditions": m.conditions, "t": None}  # fmt: skip


def test_rank_0_compares_stage_figures_of_the_hosts_that_ran_and_flags_only_those_that_did_not_report() -> None:
    """a, b and d ran and reported (d slow); c was lost (its silence is the agent verdict's, not a probe gap);
    e finished but its probe never reported. Pair figures go to the pair rule, never host against host."""
    from rigcheck.engine.fleet.verdicts import fleet_verdicts, stored_figure

    probe = {"torch": {"torch": "2.13.0", "build": "CPU-only"}, "cpu": {"model": "AMD EPYC 9654"}}
    link = {"bytes": 2**20, "bound": "link", "pair": ["a", "b"], "broken": None}
    pair = Measurement("fleet-links", "pair all_reduce 1 MiB a-b", 1.0, "GB/s", None, 3, "cpu", link, conditions(None))
    rows = [stored(h, train("cpu", v)) for h, v in (("a", 100.0), ("b", 98.0), ("d", 50.0))] + [stored("a", pair)]
    rows += [stored(h, host_copy(v)) for h, v in (("a", 11.5), ("b", 11.4), ("d", 8.0))]  # a stage before "fleet"
    report = {
        "measurements": rows,
        "host_facts": {h: {"probe": probe} for h in ("a", "b", "d")},
        "fleet": {"hosts": ["a", "b", "c", "d", "e"], "states": {"a": "done", "b": "done", "c": "lost", "d": "done",
                                                                  "e": "done"}},
    }  # fmt: skip
    fingerprints = {h: ("f00d", {"torch": "2.13.0"}) for h in ("a", "b", "d")}
    found = fleet_verdicts(report, fingerprints)
    assert sorted((h, v.check, v.status) for h, v in found if v.status != Status.PASS) == [
        ("d", "fleet-host", Status.WARN),
        ("e", "fleet-probe", Status.WARN),
        ("e", "fleet-probe", Status.WARN),
    ]
    [slow] = [v for h, v in found if h == "d"]
    assert "worst train c128 b1024 fp32 50 samples/s (on its CPU), 49% below their median 99" in slow.explanation
    assert {v.explanation for h, v in found if h == "e"} == {
        "its probe did not report: driver, torch build and GPUs not compared",
        "it reported no environment fingerprint: its environment not compared",
    }
    summary = next(v for h, v in found if v.check == "fleet-peers")
    assert summary.numbers["host_figures"] == 2  # training and bandwidth; the pair figure is not compared here
    figure = stored_figure(rows[0])
    assert (figure.unit, figure.t, figure.value) == ("samples/s", 0.0, 100.0)
    bare = stored_figure(rows[0] | {"repeats": None, "conditions": None, "params": None, "device": None})
    assert (bare.repeats, bare.conditions, bare.params, bare.device) == (1, {}, {}, "")
    assert stored_figure(stored("a", replace(train("cpu", 1.0), unit=""))).unit == ""


def test_pair_figures_reach_the_pair_rule_and_name_the_host_slow_with_every_peer() -> None:
    from rigcheck.engine.fleet.pairs import pair_verdicts
    from rigcheck.engine.fleet.verdicts import fleet_verdicts, stored_figure

    def pair(a: str, b: str, gbs: float) -> dict[str, Any]:
        params = {"bytes": 2**20, "bound": "link", "pair": [a, b], "broken": None}
        figure = Measurement("fleet-links", f"pair all_reduce 1 MiB {a}-{b}", gbs, "GB/s", None, 3, "cpu", params,
                             conditions(None))  # fmt: skip
        return stored(a, figure)

    rows = [pair("a", "b", 10.0), pair("a", "c", 10.2), pair("b", "c", 9.9), pair("a", "d", 4.0),
            pair("b", "d", 4.1), pair("c", "d", 3.9)]  # fmt: skip
    report = {"measurements": rows, "host_facts": {}, "fleet": {"hosts": [], "states": {}}}
    expected = pair_verdicts([stored_figure(r) for r in rows])
    assert [h for h, v in expected if v.status == Status.WARN] == ["d"]

    def said(found: list[tuple[str, Verdict]]) -> list[tuple[str, str, Status, str]]:
        return [(h, v.check, v.status, v.explanation) for h, v in found]

    assert said(fleet_verdicts(report, {})) == said(expected)  # nothing else: pair figures are no stage figures


def test_the_summary_says_how_cpu_figures_were_grouped_and_gpu_figures_by_their_count() -> None:
    *_, (_, gpu_only) = fleet_peer_verdicts(gpu_fleet())
    assert "CPU figures by name" in gpu_only.explanation  # a GPU model is no CPU model
    slow = [(h, replace(m, value=m.value * 0.5) if h == "b" else m) for h, m in gpu_fleet()]
    [(_, named)] = [(h, v) for h, v in warns(fleet_peer_verdicts(slow)) if v.check == "fleet-host"]
    assert "(median of its 4 NVIDIA H200 GPU(s))" in named.explanation
    one = [(h, m) for h, m in slow if m.device == "cuda:0"]
    [(_, named)] = [(h, v) for h, v in warns(fleet_peer_verdicts(one)) if v.check == "fleet-host"]
    assert "(on its NVIDIA H200)" in named.explanation


def test_a_gpu_is_named_by_its_model_from_its_conditions_else_its_params() -> None:
    from rigcheck.engine.trust.peers import below_best, gpu_model

    m = matmul("cuda:0", 700.0)
    assert gpu_model(replace(m, params={})) == H200
    assert gpu_model(replace(m, conditions={}, params={"gpu_name": "NVIDIA B200"})) == "NVIDIA B200"
    assert gpu_model(replace(m, conditions={}, params={})) == "GPU"
    # each unit against the best of the others: c is 11% below b, the best, though within 10% of a
    assert [(u, round(below, 2)) for u, _, below in below_best({"a": 95.0, "b": 100.0, "c": 89.0}, 0.10)] == [
        ("c", 0.11)
    ]
    # a unit that sorts before the best, and the runner-up itself, are each set against the best
    assert [u for u, _, _ in below_best({"a": 89.0, "b": 100.0, "c": 95.0}, 0.10)] == ["a"]
    assert [u for u, _, _ in below_best({"a": 80.0, "b": 100.0, "c": 85.0}, 0.10)] == ["a", "c"]


def test_two_gpus_of_a_model_are_peers_and_one_alone_is_not() -> None:
    pair = [matmul("cuda:0", 780.0), matmul("cuda:1", 600.0)]
    found = list(peer_verdicts(pair, "matmul"))
    assert [(v.device, v.status) for v in found] == [("cuda:1", Status.WARN)]
    assert list(peer_verdicts(pair[:1], "matmul")) == []


def test_a_host_slow_in_one_of_three_figures_is_not_the_slow_host_and_in_two_it_is() -> None:
    def fleet(slow: int) -> list[tuple[str, Measurement]]:
        return [
            (host, matmul(f"cuda:{i}", 780.0 * (0.5 if host == "b" and n < slow else 1.0), dtype=dtype))
            for host in HOSTS
            for i in range(2)
            for n, dtype in enumerate(("bf16", "fp16", "fp32"))
        ]

    assert [v.check for _, v in warns(fleet_peer_verdicts(fleet(1))) if v.check == "fleet-host"] == []
    assert [h for h, v in warns(fleet_peer_verdicts(fleet(2))) if v.check == "fleet-host"] == ["b"]


def test_cpu_figures_meet_only_hosts_of_their_cpu_model_named_in_their_conditions() -> None:
    slow = cpu_fleet("b", 0.6, cpu_model="Intel Xeon 6430")  # b's model is known only from its own conditions
    assert warns(fleet_peer_verdicts(slow)) == []  # a and c compared with each other; b, alone of its model, not


def test_long_values_are_cut_short_in_the_words() -> None:
    from rigcheck.engine.fleet.probe_differences import _short

    assert _short("x" * 100) == '"' + "x" * 56 + "..." and _short("short") == '"short"'


def test_a_link_figure_counts_for_its_gpu_only_when_pinned() -> None:
    gpu = device_copy("cuda:0", 50.0)
    for bound, pinned, expected in (("link", True, True), ("link", False, False), ("host", True, False)):
        assert comparable(replace(gpu, params=gpu.params | {"bound": bound, "pinned": pinned})) is expected, bound


def test_the_cause_leaves_out_idle_as_read_at_run_time() -> None:
    from rigcheck.engine.trust.peers import cause_of

    idle = "".join(["id", "le"])  # as a sample decodes it: equal to "idle", not the same object
    m = matmul("cuda:0", 600.0, sm_clock_mean_mhz=1500.0, clock_ratio=0.758, throttle=[idle, "power cap"])
    assert cause_of(m).startswith("likely cause: SM clock at 76% of max (power cap); next: ")
    unexplained = cause_of(replace(m, conditions=m.conditions | {"throttle": [idle]}))
    assert unexplained.startswith("likely cause: SM clock at 76% of max (no throttle reason reported)")


def test_a_host_timed_gpu_figure_counts_only_where_the_driver_saw_the_gpu_busy() -> None:
    host_timed = replace(train("cuda:0", 900.0), params=train("cuda:0", 900.0).params | {"timer": "perf_counter"})
    for utilization, expected in ((50.0, False), (79.9, False), (80.0, True), (99.0, True), (None, True)):
        figure = replace(host_timed, conditions=host_timed.conditions | {"utilization_mean_pct": utilization})
        assert comparable(figure) is expected, utilization
