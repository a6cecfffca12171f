"""engine/fleet/compare_hosts.py with exactly two hosts, the smallest fleet: two drivers are no majority, never
agreement; a GPU model on one host only is left to the within-host rule; a GPU or a host just inside and just
outside 10% of its best peer; and the summary's and warnings' words to the letter."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rigcheck.engine.events import Status
from rigcheck.engine.fleet.compare_hosts import fleet_peer_verdicts
from rigcheck.engine.fleet.probe_differences import probe_differences
from test_fleet_compare import fingerprint, host_copy, matmul, probe_facts, train

A100 = "NVIDIA A100-SXM4-80GB"


def two(facts_b: dict[str, Any] | None = None, **print_b: Any) -> list[tuple[str, Any]]:
    facts = {"a": probe_facts(), "b": facts_b if facts_b is not None else probe_facts()}
    return probe_differences(facts, {"a": fingerprint("a"), "b": fingerprint("b", **print_b)})


def test_two_hosts_that_agree_pass_naming_what_they_agree_on() -> None:
    [(host, verdict)] = two()
    assert host == "" and verdict.status == Status.PASS and verdict.check == "fleet-probe"
    assert verdict.explanation.startswith("2 hosts agree on driver ")
    assert verdict.explanation.endswith("8 GPU(s), the environment fingerprint (all but its host)")
    assert verdict.numbers["hosts"] == ["a", "b"]


def test_two_hosts_with_different_drivers_are_a_mixed_fleet_never_agreement() -> None:
    found = two(probe_facts(driver="570.86.15"), driver="570.86.15")
    assert [(h, v.status, v.explanation, v.numbers) for h, v in found] == [
        (
            "",
            Status.WARN,
            "mixed fleet, no majority for the driver: driver 580.159 on a; driver 570.86.15 on b",
            {"item": "driver", "groups": [["a"], ["b"]]},
        ),
        (
            "",
            Status.WARN,
            'mixed fleet, no majority for the environment fingerprint: b differ from a in driver ("570.86.15" '
            'against "580.159")',
            {"item": "environment fingerprint", "groups": [["a"], ["b"]]},
        ),
    ]


def test_two_hosts_whose_environments_differ_in_one_key_name_it() -> None:
    [(host, verdict)] = two(torch="2.12.0+cu130")
    assert host == "" and verdict.status == Status.WARN
    assert verdict.explanation == (
        'mixed fleet, no majority for the environment fingerprint: b differ from a in torch ("2.12.0+cu130" against '
        '"2.13.0+cu130")'
    )


def test_one_of_two_hosts_without_probe_facts_or_a_fingerprint_is_flagged() -> None:
    found = probe_differences({"a": probe_facts(), "b": {}}, {"a": fingerprint("a")})
    assert [(h, v.explanation) for h, v in found] == [
        ("b", "its probe did not report: driver, torch build and GPUs not compared"),
        ("b", "it reported no environment fingerprint: its environment not compared"),
    ]


def gpus(host: str, values: list[float], model: str | None = None) -> list[tuple[str, Any]]:
    out = []
    for i, value in enumerate(values):
        m = matmul(f"cuda:{i}", value)
        if model:
            m = replace(m, conditions=(m.conditions or {}) | {"gpu_name": model})
        out.append((host, m))
    return out


def test_two_hosts_a_gpu_exactly_ninety_percent_of_the_best_is_not_named_and_below_it_is() -> None:
    at_edge = gpus("a", [700.0, 700.0]) + gpus("b", [630.0, 700.0])
    found = fleet_peer_verdicts(at_edge)
    assert [v.status for _, v in found] == [Status.PASS]
    assert found[0][1].explanation == (
        "2 hosts compared: 1 GPU figure(s) across every GPU of the same model in the fleet, 1 figure(s) host against "
        "host (GPU figures as each host's median over its GPUs of the model, CPU figures by name); none more than "
        "10% off the median of its peers (compared where the figure was sound and the device the bottleneck)"
    )
    assert found[0][1].numbers == {
        "hosts": ["a", "b"],
        "gpu_figures": 1,
        "host_figures": 1,
        "gpu_models": ["NVIDIA H200"],
    }
    below = gpus("a", [700.0, 700.0]) + gpus("b", [629.0, 700.0])
    slow = [(h, v) for h, v in fleet_peer_verdicts(below) if v.status == Status.WARN]
    assert [(h, v.check, v.device) for h, v in slow] == [("b", "fleet-peers matmul bf16 4096", "cuda:0")]
    assert slow[0][1].explanation.startswith(
        "b cuda:0 matmul bf16 4096 629 TFLOP/s, 10% below the median of its 3 peers across the fleet (700, MAD 0; "
        "peers 700-700)"
    )
    assert slow[0][1].numbers["peer_count"] == 3 and slow[0][1].numbers["best"] == 700.0


def test_a_gpu_model_on_one_host_only_is_not_compared_across_the_fleet() -> None:
    figures = (
        gpus("a", [700.0, 700.0])
        + gpus("b", [700.0, 700.0])
        + [("a", replace(matmul("cuda:2", 200.0), conditions=matmul("cuda:2", 200.0).conditions | {"gpu_name": A100}))]
    )
    found = fleet_peer_verdicts(figures)
    assert [v.status for _, v in found] == [Status.PASS]
    assert found[0][1].numbers["gpu_figures"] == 1 and found[0][1].numbers["gpu_models"] == ["NVIDIA H200"]
    # with the A100 on both hosts it is compared, and the slow one named
    figures += [
        ("b", replace(matmul("cuda:2", 300.0), conditions=matmul("cuda:2", 300.0).conditions | {"gpu_name": A100}))
    ]
    found = fleet_peer_verdicts(figures)
    assert found[-1][1].numbers["gpu_figures"] == 2 and found[-1][1].numbers["gpu_models"] == [A100, "NVIDIA H200"]
    assert [(h, v.device) for h, v in found if v.check.startswith("fleet-peers ") and v.status == Status.WARN] == [
        ("a", "cuda:2")
    ]


def test_of_two_hosts_the_slow_one_is_named_against_the_other() -> None:
    figures = gpus("a", [700.0, 700.0]) + gpus("b", [600.0, 610.0])
    named = [(h, v) for h, v in fleet_peer_verdicts(figures) if v.check == "fleet-host"]
    assert [h for h, _ in named] == ["b"]
    verdict = named[0][1]
    assert verdict.explanation.startswith(
        "b is the slow host: 1 of its 1 compared figure(s) more than 10% below the other hosts' median; worst matmul "
        "bf16 4096 605 TFLOP/s (median of its 2 NVIDIA H200 GPU(s)), 14% below their median 700; "
    )
    assert verdict.numbers["median"] == 700.0 and verdict.numbers["slow_figures"] == ["matmul bf16 4096"]
    # a host just inside 10% of the other is not named
    close = gpus("a", [700.0, 700.0]) + gpus("b", [630.0, 630.0])
    assert not [v for _, v in fleet_peer_verdicts(close) if v.check == "fleet-host"]


def test_two_cpu_hosts_compare_by_their_cpu_figures() -> None:
    figures = [("a", host_copy(20.0)), ("b", host_copy(17.0)), ("a", train("cpu", 1000.0)), ("b", train("cpu", 800.0))]
    found = fleet_peer_verdicts(figures)
    [(host, slow)] = [(h, v) for h, v in found if v.check == "fleet-host"]
    assert host == "b" and "(on its CPU)" in slow.explanation
    assert slow.explanation.startswith("b is the slow host: 2 of its 2 compared figure(s)")
    summary = found[-1][1]
    assert summary.numbers["host_figures"] == 2 and "CPU figures by name" in summary.explanation
    # given the hosts' CPU models, CPU figures are compared only within one model
    by_model = fleet_peer_verdicts(figures, cpu_models={"a": "EPYC 9654", "b": "Xeon 8480"})
    assert by_model == []
    same = fleet_peer_verdicts(figures, cpu_models={"a": "EPYC 9654", "b": "EPYC 9654"})
    assert "CPU figures by CPU model" in same[-1][1].explanation


def test_gpu_models_named_in_the_summary_are_gpu_models_only() -> None:
    figures = gpus("a", [700.0, 700.0]) + gpus("b", [700.0, 700.0]) + [("a", host_copy(20.0)), ("b", host_copy(20.0))]
    found = fleet_peer_verdicts(figures, cpu_models={"a": "AMD EPYC 9654", "b": "AMD EPYC 9654"})
    assert found[-1][1].numbers["gpu_models"] == ["NVIDIA H200"]
    assert found[-1][1].numbers["host_figures"] == 2


def test_cpu_figures_that_name_their_cpu_model_are_grouped_by_it_without_the_hosts_probes() -> None:
    named = [
        (h, replace(host_copy(20.0), params=host_copy(20.0).params | {"cpu_model": "AMD EPYC 9654"})) for h in "ab"
    ]
    summary = fleet_peer_verdicts(named)[-1][1]
    assert "CPU figures by CPU model" in summary.explanation
    assert "CPU figures by name" in fleet_peer_verdicts([(h, host_copy(20.0)) for h in "ab"])[-1][1].explanation


def test_a_model_on_one_host_listed_first_does_not_end_the_comparison_of_the_rest() -> None:
    a100 = replace(matmul("cuda:2", 200.0), conditions=matmul("cuda:2", 200.0).conditions | {"gpu_name": A100})
    figures = [("a", a100), *gpus("a", [700.0, 700.0]), *gpus("b", [600.0, 700.0])]
    found = fleet_peer_verdicts(figures)
    slow = [(h, v.device) for h, v in found if v.check.startswith("fleet-peers ") and v.status == Status.WARN]
    assert slow == [("b", "cuda:0")]
    assert found[-1][1].numbers["gpu_figures"] == 1


def test_hosts_that_report_a_digest_without_its_basis_are_compared_by_the_digest() -> None:
    facts = {"a": probe_facts(), "b": probe_facts()}
    [(_, same)] = probe_differences(facts, {"a": ("d1", {}), "b": ("d1", {"host": "b"})})
    assert same.status == Status.PASS and same.explanation.endswith("the environment fingerprint (all but its host)")
    [(host, mixed)] = probe_differences(facts, {"a": ("d1", {}), "b": ("d2", {})})
    assert host == "" and mixed.explanation.startswith("mixed fleet, no majority for the environment fingerprint")
