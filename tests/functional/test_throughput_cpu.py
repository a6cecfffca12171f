"""The throughput stages' CPU paths, run for real at the quick size through the CLI: matmul's sweep and
bandwidth's host copy give figures that agree with their own timings and limits, and their verdicts; a host
copy whose clocks disagree is broken, and gets no PASS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.stages import bandwidth
from rigcheck.engine.stages.matmul.stage import BEYOND_USE_SPREAD

MIB = 2**20


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("throughput")
    out = folder / "out.json"
    command = [sys.executable, "-m", "rigcheck.tui.cli", "run", "matmul", "bandwidth", "--profile", "quick"]
    done = subprocess.run(
        [*command, "--device", "cpu", "--json", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, RIGCHECK_STORE=str(folder / "s.db")),
        timeout=600,
        check=False,
    )
    found = json.loads(out.read_text())
    # 7 only where a best could not be judged (every figure too noisy on a busy machine): never 1 for that
    unjudged = any(v["status"] == "INCONCLUSIVE" for v in found["verdicts"])
    assert done.returncode == (7 if unjudged else 0), done.stderr[-3000:]
    return found


def figures(report: dict, stage: str) -> dict[str, dict]:
    return {m["name"]: m for m in report["measurements"] if m["stage"] == stage}


def verdicts(report: dict, stage: str) -> dict[str, dict]:
    return {v["check_name"]: v for v in report["verdicts"] if v["stage"] == stage}


def test_the_host_copy_figure_is_its_own_timing_and_passes(report: dict) -> None:
    [(name, copy)] = figures(report, "bandwidth").items()
    assert name == "host memory copy 256 MiB" and copy["unit"] == "GB/s" and copy["device"] == "cpu"
    params = copy["params"]
    assert (params["direction"], params["bound"], params["threads"]) == ("host", "host", 1)
    assert params["bytes"] == 2 * 256 * MIB  # read and written
    assert copy["value"] == pytest.approx(params["bytes"] / params["median_s"] / 1e9, rel=1e-6)
    assert params["best"] >= copy["value"] and params["broken"] is None
    assert 0.05 < copy["value"] < 2000  # a host's memory, not a unit slip of a thousand either way
    found = verdicts(report, "bandwidth")
    assert found["host-copy"]["status"] == "NOT JUDGED"  # nothing to judge a host's memory against: never PASS
    assert found["host-copy"]["explanation"].startswith(f"host memory copy: {copy['value']:.1f} GB/s; not judged")
    # the copy itself passed, but no reference holds this CPU's memory: the stage is NOT JUDGED, never a PASS
    assert {s["name"]: s["status"] for s in report["stages"]}["bandwidth"] == "NOT JUDGED"
    (count,) = [v for v in report["verdicts"] if v["stage"] == "bandwidth" and v["check_name"] == "expectations"]
    assert count["status"] == "NOT JUDGED" and "no reference for this model" in count["explanation"]


def test_the_cpu_matmul_sweep_gives_each_point_and_the_best_of_each_dtype(report: dict) -> None:
    found = figures(report, "matmul")
    skipped = {k for k, v in verdicts(report, "matmul").items() if v["status"] == "SKIP"}
    expected = {"matmul fp32 256", "matmul fp32 512", "matmul fp32 256 (numpy)", "matmul fp32 512 (numpy)"}
    expected |= {"matmul bf16 256"} | (set() if "bf16-larger" in skipped else {"matmul bf16 512"})
    assert set(found) == expected
    for name, m in found.items():
        p = m["params"]
        assert m["unit"] == "GFLOP/s" and m["device"] == "cpu" and p["bound"] == "host", name
        assert m["value"] == pytest.approx(2.0 * p["m"] ** 3 / p["median_s"] / 1e9, rel=1e-6), name
        assert p["broken"] is None and 0 < m["value"] < p["limit"], name  # under the CPU's own limit
        assert m["conditions"]["trust"] in ("TRUSTED", "SUSPECT", "NOISY"), name
    best = verdicts(report, "matmul")
    for key, names in (
        ("fp32", ["matmul fp32 256", "matmul fp32 512"]),
        ("fp32 (numpy)", [n for n in found if "numpy" in n]),
    ):
        steady = [n for n in names if (found[n]["params"].get("spread_rel") or 0) <= BEYOND_USE_SPREAD]
        if not steady:  # every figure spread too far to be a best (a busy machine): the verdict says so
            assert best[f"best-{key}"]["status"] == "INCONCLUSIVE" and "no best" in best[f"best-{key}"]["explanation"]
            continue
        top = max(steady, key=lambda n: found[n]["value"])  # a figure spread beyond use is never the best
        assert best[f"best-{key}"]["status"] == "NOT JUDGED"  # no reference for a CPU: never a PASS
        assert best[f"best-{key}"]["numbers"]["shape"] == top
        assert best[f"best-{key}"]["explanation"].startswith(f"best {key} on cpu: {found[top]['value']:.4g} GFLOP/s")
    noisy = sorted(n for n, m in found.items() if m["params"]["noisy"] and not m["params"]["launch_bound"])
    if noisy:  # a busy machine: the noise is named, and only the noisy figures are
        assert best["noise"]["status"] == "PASS" and sorted(best["noise"]["numbers"]["noisy"]) == noisy  # a note
    else:
        assert "noise" not in best
    assert {s["name"]: s["status"] for s in report["stages"]}["matmul"] in ("NOT JUDGED", "WARN", "INCONCLUSIVE")


def test_a_host_copy_whose_clocks_disagree_is_broken_and_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    clean = list(bandwidth.cpu_bandwidth(4 * MIB))
    assert [type(e) for e in clean] == [Measurement, Verdict] and clean[1].status == Status.NOT_JUDGED

    real = bandwidth.time_calls

    def wall_clock_says_ten_times_longer(*args, **kwargs):  # type: ignore[no-untyped-def]
        stats = real(*args, **kwargs)
        return replace(stats, check_times=tuple(10 * t + 0.1 for t in stats.times))

    monkeypatch.setattr(bandwidth, "time_calls", wall_clock_says_ten_times_longer)
    events = list(bandwidth.cpu_bandwidth(4 * MIB))
    figure = events[0]
    assert isinstance(figure, Measurement) and figure.params["broken"]
    fails = [e for e in events if isinstance(e, Verdict)]
    assert [(v.check, v.status) for v in fails] == [("figure host memory copy 4 MiB", Status.FAIL)]
    assert "the figure is not a result" in fails[0].explanation
