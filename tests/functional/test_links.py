"""The links stage: nccl-tests arithmetic by hand, the topology matrix from fake drivers, and real
collectives over gloo across 2-3 processes with a wrong result, a hung rank and a dead rank injected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rigcheck.engine.measure.busbw import algbw, bus_factor, busbw, max_across_ranks, size_label
from rigcheck.engine.stages.links.collectives import Failure, Plan, Ready, StepResult, run_collectives
from rigcheck.engine.stages.links.topology import amd_topology, nvidia_topology, render

GIB = 2**30
MIB = 2**20
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


# --- the arithmetic, worked by hand -------------------------------------------------------------


def test_bus_factors_by_hand() -> None:
    assert bus_factor("all_reduce", 2) == 1.0  # 2(2-1)/2
    assert bus_factor("all_reduce", 8) == 1.75  # 2*7/8
    assert bus_factor("all_gather", 4) == 0.75  # 3/4
    assert bus_factor("reduce_scatter", 8) == 0.875  # 7/8
    assert bus_factor("all_to_all", 2) == 0.5  # 1/2
    assert bus_factor("broadcast", 8) == 1.0
    with pytest.raises(ValueError, match="unknown collective"):
        bus_factor("gather", 2)


def test_busbw_by_hand() -> None:
    # 1 GiB all_reduce on 2 ranks in 3.314 ms: algbw 1073741824 / 0.003314 = 324.0 GB/s, busbw x1.
    assert algbw(GIB, 0.003314) / 1e9 == pytest.approx(324.00, abs=0.01)
    assert busbw("all_reduce", 2, GIB, 0.003314) / 1e9 == pytest.approx(324.00, abs=0.01)
    # 1 GiB all_gather output on 8 ranks in 4 ms: algbw 268.435 GB/s, busbw x7/8 = 234.88.
    assert busbw("all_gather", 8, GIB, 0.004) / 1e9 == pytest.approx(234.88, abs=0.01)
    # 256 MiB all_reduce on 4 ranks in 2 ms: algbw 134.218 GB/s, busbw x1.5 = 201.33.
    assert busbw("all_reduce", 4, 256 * MIB, 0.002) / 1e9 == pytest.approx(201.33, abs=0.01)
    # broadcast 1 MiB in 0.1 ms: 10.486 GB/s either way.
    assert busbw("broadcast", 8, MIB, 1e-4) / 1e9 == pytest.approx(10.49, abs=0.01)


def test_slowest_rank_per_call_and_size_labels() -> None:
    assert max_across_ranks([[1.0, 5.0, 2.0], [3.0, 1.0, 2.5]]) == [3.0, 5.0, 2.5]
    assert (size_label(MIB), size_label(256 * MIB), size_label(GIB)) == ("1 MiB", "256 MiB", "1 GiB")


def test_step_result_takes_the_median_of_the_slowest_rank() -> None:
    result = StepResult("all_gather", 4 * MIB, 4, (0.004, 0.001, 0.002), 0, {}, "events", "wall clock", None)
    assert result.seconds == 0.002
    assert result.algbw_gbs == pytest.approx(4 * MIB / 0.002 / 1e9)
    assert result.busbw_gbs == pytest.approx(result.algbw_gbs * 0.75)


# --- topology from fake drivers -----------------------------------------------------------------


class FakeNvLink:
    """NVML's answers for a few GPUs: bus ids, common ancestors and active NVLinks (remote bus id, type)."""

    def __init__(
        self, buses: list[str], levels: dict[tuple[int, int], int], links: list[list[tuple[str, int]]]
    ) -> None:
        self.buses, self.levels, self.links = buses, levels, links

    def count(self) -> int:
        return len(self.buses)

    def bus_id(self, index: int) -> str:
        return self.buses[index]

    def common_ancestor(self, a: int, b: int) -> int | None:
        return self.levels.get((min(a, b), max(a, b)))

    def nvlinks(self, index: int) -> list[tuple[str, int]]:
        return self.links[index]

    def pcie(self, index: int) -> dict[str, int]:
        return {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}


def test_two_gpus_joined_by_18_nvlinks_read_nv18() -> None:
    buses = ["00000000:18:00.0", "00000000:2A:00.0"]
    nvml = FakeNvLink(buses, {(0, 1): 50}, [[("0000:2a:00.0", 0)] * 18, [("0000:18:00.0", 0)] * 18])
    found = nvidia_topology(nvml, ["0000:18:00.0", "0000:2a:00.0"])
    assert found["cells"] == [["X", "NV18"], ["NV18", "X"]]
    assert [g["nvlinks_active"] for g in found["gpus"]] == [18, 18]
    assert render(["cuda:0", "cuda:1"], found["cells"]).splitlines() == [
        "          cuda:0  cuda:1",
        "cuda:0         X    NV18",
        "cuda:1      NV18       X",
    ]


def test_pcie_only_gpus_read_their_common_ancestor_in_torch_order() -> None:
    # NVML lists the GPUs in another order than torch: matched by bus id, not position.
    buses = ["0000:41:00.0", "0000:01:00.0", "0000:02:00.0"]
    levels = {(0, 1): 50, (0, 2): 50, (1, 2): 10}
    found = nvidia_topology(FakeNvLink(buses, levels, [[], [], []]), ["0000:01:00.0", "0000:02:00.0", "0000:41:00.0"])
    assert found["cells"] == [["X", "PIX", "SYS"], ["PIX", "X", "SYS"], ["SYS", "SYS", "X"]]
    assert [g["nvml_index"] for g in found["gpus"]] == [1, 2, 0]


def test_gpus_on_an_nvswitch_count_their_links_to_the_switch() -> None:
    buses = ["0000:18:00.0", "0000:2a:00.0"]
    switch = [("0000:99:00.0", 2)] * 18
    found = nvidia_topology(FakeNvLink(buses, {(0, 1): 50}, [switch, switch]), buses)
    assert found["cells"][0][1] == "NV18"
    unknown = [("0000:99:00.0", -1)] * 12  # the driver would not say what is at the far end: not a GPU it lists
    assert nvidia_topology(FakeNvLink(buses, {(0, 1): 50}, [unknown, unknown]), buses)["cells"][0][1] == "NV12"
    hidden = [("0000:77:00.0", 0)] * 6  # links to a GPU this container cannot see join nothing here
    assert nvidia_topology(FakeNvLink(buses, {(0, 1): 40}, [hidden, hidden]), buses)["cells"][0][1] == "NODE"


def _kfd_node(root: Path, node: int, props: dict[str, int], links: list[dict[str, int]]) -> None:
    folder = root / str(node)
    (folder / "io_links").mkdir(parents=True)
    (folder / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    for i, link in enumerate(links):
        (folder / "io_links" / str(i)).mkdir()
        (folder / "io_links" / str(i) / "properties").write_text("".join(f"{k} {v}\n" for k, v in link.items()))


def test_amd_xgmi_from_a_fake_kfd_tree(tmp_path: Path) -> None:
    _kfd_node(tmp_path, 0, {"simd_count": 0}, [])  # the CPU node
    _kfd_node(
        tmp_path,
        1,
        {"simd_count": 304, "location_id": 0x0C00, "domain": 0},
        [{"type": 2, "node_from": 1, "node_to": 0}, {"type": 11, "node_from": 1, "node_to": 2}],
    )
    _kfd_node(
        tmp_path,
        2,
        {"simd_count": 304, "location_id": 0x2200, "domain": 0},
        [{"type": 2, "node_from": 2, "node_to": 0}, {"type": 11, "node_from": 2, "node_to": 1}],
    )
    found = amd_topology(["0000:0c:00.0", "0000:22:00.0"], root=tmp_path)
    assert found is not None and found["cells"] == [["X", "XGMI"], ["XGMI", "X"]]
    assert amd_topology(["0000:0c:00.0", "0000:33:00.0"], root=tmp_path) is None  # a GPU KFD does not list
    assert amd_topology(["0000:0c:00.0"], root=tmp_path / "absent") is None


# --- real collectives over gloo -----------------------------------------------------------------


def _plan(ranks: int = 2, fault: str = "", collectives: tuple[str, ...] = COLLECTIVES, timeout: float = 60.0) -> Plan:
    return Plan("gloo", ("cpu",) * ranks, ((MIB, 3),), collectives, warmup=1, step_timeout=timeout, fault=fault)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")


def test_every_collective_runs_exact_on_three_gloo_ranks() -> None:
    outcomes = list(run_collectives(_plan(3)))
    ready = [o for o in outcomes if isinstance(o, Ready)]
    results = {o.collective: o for o in outcomes if isinstance(o, StepResult)}
    assert ready and ready[0].backend == "gloo" and len(ready[0].pids) == 3
    assert not [o for o in outcomes if isinstance(o, Failure)]
    assert set(results) | {"all_to_all"} == set(COLLECTIVES)  # gloo may lack all_to_all; then it says so
    for result in results.values():
        assert result.ranks == 3 and result.wrong == 0 and result.busbw_gbs > 0
        assert result.size_bytes == MIB - (MIB // 4 % 3) * 4  # the array divides among the ranks
        assert len(result.times) == 3 and result.timer_reason is None
    assert not any(_alive(pid) for pid in ready[0].pids)


def test_a_wrong_element_on_one_rank_is_counted_and_named() -> None:
    outcomes = list(run_collectives(_plan(2, "wrong:1:all_gather", ("all_reduce", "all_gather"))))
    results = {o.collective: o for o in outcomes if isinstance(o, StepResult)}
    assert results["all_reduce"].wrong == 0
    bad = results["all_gather"]
    assert bad.wrong == 1 and list(bad.wrong_by_rank) == [1]
    first = bad.wrong_by_rank[1]["first_wrong"]
    assert first["got"] == first["expected"] + 1


def test_a_hung_rank_becomes_a_timeout_naming_it_and_no_worker_survives() -> None:
    outcomes = list(run_collectives(_plan(2, "hang:1:broadcast", ("all_reduce", "broadcast"), timeout=3.0)))
    ready = next(o for o in outcomes if isinstance(o, Ready))
    failure = outcomes[-1]
    assert isinstance(failure, Failure) and failure.status == "TIMEOUT"
    assert failure.numbers["last_rank"] == 0 and failure.numbers["behind"] == [1]
    assert "broadcast 1 MiB hung" in failure.explanation and "rank 1 finished all_reduce 1 MiB" in failure.explanation
    assert not any(_alive(pid) for pid in ready.pids)


def test_a_rank_that_dies_is_a_crash_naming_it() -> None:
    outcomes = list(run_collectives(_plan(2, "die:0:all_gather", ("all_reduce", "all_gather"), timeout=20.0)))
    failure = outcomes[-1]
    assert isinstance(failure, Failure) and failure.status == "CRASH"
    assert failure.numbers["rank"] == 0 and "died of signal 9" in failure.explanation


# --- the stage ----------------------------------------------------------------------------------


def test_one_gpu_has_nothing_to_link(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from rigcheck.engine.events import Status, Verdict
    from rigcheck.engine.stage import StageContext, StageSpec
    from rigcheck.engine.stages.links import stage as links

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for device in ("all", "cuda:0"):
        events = list(links.run(StageContext(StageSpec("links", device, "quick"))))
        assert [(e.status, e.check) for e in events if isinstance(e, Verdict)] == [(Status.SKIP, "links")]
        assert "nothing to link" in events[0].explanation
    missing = list(links.run(StageContext(StageSpec("links", "cuda:0,cuda:3", "quick"))))
    assert missing[0].status == Status.FAIL and "cuda:3" in missing[0].explanation


def test_a_host_without_gpus_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """gloo between one host's own processes is loopback noise, not a link: SKIP unless asked for."""
    import torch
    from rigcheck.engine.events import Measurement, Status, Verdict
    from rigcheck.engine.stage import StageContext, StageSpec
    from rigcheck.engine.stages.links import stage as links

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("RIGCHECK_LINKS_HOST", raising=False)
    for device in ("cpu", "all"):
        events = list(links.run(StageContext(StageSpec("links", device, "quick"))))
        assert [(e.status, e.check) for e in events if isinstance(e, Verdict)] == [(Status.SKIP, "links")]
        assert "no GPUs: nothing to link" in events[0].explanation and "rigcheck fleet" in events[0].explanation
        assert not [e for e in events if isinstance(e, Measurement)]


def test_links_stage_end_to_end_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigcheck.tui.cli",
            "run",
            "links",
            "--device",
            "cpu",
            "--profile",
            "quick",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"), RIGCHECK_LINKS_HOST="1"),  # asked for
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    checks = {v["check_name"]: v for v in report["verdicts"] if v["stage"] == "links"}
    assert checks["topology"]["status"] == "SKIP"
    for name in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
        assert checks[name]["status"] == "PASS", checks[name]
        assert "#wrong 0" in checks[name]["explanation"] and "measures the host" in checks[name]["explanation"]
    figures = {m["name"]: m for m in report["measurements"] if m["stage"] == "links"}
    assert {"all_reduce 1 MiB busbw", "all_reduce 4 MiB busbw", "broadcast 4 MiB busbw"} <= set(figures)
    reduce = figures["all_reduce 4 MiB busbw"]
    assert reduce["params"]["ranks"] == 2 and reduce["params"]["wrong"] == 0 and reduce["params"]["backend"] == "gloo"
    assert reduce["value"] == pytest.approx(reduce["params"]["algbw"] * 1.0)
    assert {s["name"]: s["status"] for s in report["stages"]} == {
        "links": "NOT JUDGED"
    }  # gloo on the CPU: no reference to judge it against


def test_a_copy_that_loses_data_is_counted() -> None:
    import torch
    from rigcheck.engine.stages.links.p2p import pattern, wrong_after

    src = pattern(4096, torch.device("cpu"), 3)
    dst = torch.empty_like(src)
    assert wrong_after(lambda: dst.copy_(src), dst, 3) == 0
    assert wrong_after(lambda: dst[:1000].copy_(src[:1000]), dst, 3) == 3096  # the rest stays poisoned
    assert wrong_after(lambda: dst.copy_(src.roll(1)), dst, 3) == 4096  # misplaced by one element


def test_a_p2p_copy_that_arrives_wrong_fails_its_pair_and_the_summary_does_not_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch
    from rigcheck.engine.events import Measurement, Status, Verdict
    from rigcheck.engine.stages.links import stage

    def one_way_figure(src: str, dst: str) -> Measurement:
        params = {"direction": "one-way", "src": src, "dst": dst, "broken": None}
        return Measurement("links", f"p2p {src}->{dst} 256 MiB", 390.0, "GB/s", 1.0, 10, src, params)

    def pairs(wrong: bool):  # type: ignore[no-untyped-def]
        def fake(devices, numel, reps):  # type: ignore[no-untyped-def]
            yield "figure", [one_way_figure("cuda:0", "cuda:1")]
            if wrong:
                yield "wrong", ("cuda:0->cuda:1", 17)
            yield "figure", [one_way_figure("cuda:1", "cuda:0")]

        return fake

    devices = [torch.device("cuda", 0), torch.device("cuda", 1)]
    monkeypatch.setattr(stage, "p2p_pairs", pairs(wrong=False))
    clean = [e for e in stage.peer_copies(devices, "quick", {}) if isinstance(e, Verdict)]
    assert [(v.check, v.status) for v in clean] == [("p2p", Status.PASS)]
    monkeypatch.setattr(stage, "p2p_pairs", pairs(wrong=True))
    found = [e for e in stage.peer_copies(devices, "quick", {}) if isinstance(e, Verdict)]
    assert [(v.check, v.status) for v in found] == [("p2p cuda:0->cuda:1", Status.FAIL)]
    assert found[0].explanation == "p2p copy cuda:0->cuda:1: 17 wrong elements after the copy"


def test_collective_figures_fail_on_wrong_elements_and_on_clocks_that_disagree() -> None:
    from rigcheck.engine.events import Measurement, Status, Verdict
    from rigcheck.engine.stages.links.stage import step_events

    clean = StepResult("all_reduce", MIB, 2, (0.001, 0.001, 0.001), 0, {}, "perf_counter", "CLOCK_MONOTONIC_RAW", None)
    events = list(step_events(clean, None, {"backend": "gloo"}))
    assert [type(e) for e in events] == [Measurement] and events[0].params["broken"] is None
    wrong = {1: {"wrong": 2, "first_wrong": {"index": 7, "got": 5.0, "expected": 4.0}}}
    bad = StepResult("reduce_scatter", 4 * MIB, 2, (0.001,) * 3, 2, wrong, "events", "wall clock", "device timer odd")
    events = list(step_events(bad, None, {}))
    fails = [e for e in events if isinstance(e, Verdict) and e.status == Status.FAIL]
    assert events[0].params["broken"] == "device timer odd: the timer is broken"  # the clocks disagree
    assert any("reduce_scatter 4 MiB: 2 wrong element(s) on rank 1" in v.explanation for v in fails)
    assert any("the figure is not a result" in v.explanation for v in fails)


def test_the_rank_furthest_along_is_named_even_when_a_lagging_rank_spoke_later() -> None:
    from rigcheck.engine.stages.links.collectives import Rank, _hang

    ahead, behind = Rank(0, None, -1), Rank(1, None, -1)  # type: ignore[arg-type]
    ahead.progress, ahead.last_kind, ahead.last_step, ahead.last_sent = 3, "begin", "broadcast 1 MiB", 10.0
    behind.progress, behind.last_kind, behind.last_step, behind.last_sent = 2, "result", "all_reduce 1 MiB", 10.5
    failure = _hang([ahead, behind], 60.0, forming=False)
    assert failure.numbers["last_rank"] == 0 and failure.numbers["behind"] == [1]
    assert failure.explanation.startswith("broadcast 1 MiB hung: no rank answered for 60 s")
    both_inside = _hang([ahead, Rank(1, None, -1)], 60.0, forming=False)  # type: ignore[arg-type]
    assert both_inside.numbers["behind"] == [1]
    ahead2 = Rank(1, None, -1)  # type: ignore[arg-type]
    ahead2.progress, ahead2.last_kind, ahead2.last_step = 3, "begin", "broadcast 1 MiB"
    assert "every rank is inside it" in _hang([ahead, ahead2], 60.0, forming=False).explanation


def test_second_clock_rejects_a_broken_timer_but_not_one_preempted_call() -> None:
    from rigcheck.engine.stages.links.collectives import _disagreement

    cpu = {"timer": "perf_counter", "check": "CLOCK_MONOTONIC_RAW", "primary_total": 0.0, "check_total": 0.0}
    one_preempted = cpu | {"times": [0.002] * 5, "check_times": [0.002, 0.002, 0.0035, 0.002, 0.002]}
    assert _disagreement(one_preempted) is None
    assert "two host clocks disagree" in (_disagreement(cpu | {"times": [0.002] * 5, "check_times": [0.003] * 5}) or "")
    gpu = {"timer": "events", "check": "wall clock", "times": [0.003] * 20}
    assert _disagreement(gpu | {"primary_total": 0.060, "check_total": 0.0605}) is None
    assert "longer than the wall clock" in (_disagreement(gpu | {"primary_total": 0.060, "check_total": 0.030}) or "")
    assert "disagrees with the wall clock" in (
        _disagreement(gpu | {"primary_total": 0.0006, "check_total": 0.060}) or ""
    )
