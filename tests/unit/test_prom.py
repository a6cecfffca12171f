"""Prometheus text: a run's figures and verdicts and the monitor's live file parse with prometheus_client,
carry dcgm-exporter's labels, and are replaced in one step."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from consumers import prom_lint_problems, promtool_check
from fakes import FakeNvml, StartingSampler
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import REGISTRY, CollectorRegistry
from rigcheck.engine.events import Facts, Measurement, Status, Verdict
from rigcheck.engine.exits import EXIT_ERROR
from rigcheck.engine.report.atomic_write import write_atomic
from rigcheck.engine.report.prom import TRUST_CODES, RunCollector, report_to_prom
from rigcheck.engine.report.prom_families import kept_labels
from rigcheck.engine.report.prom_telemetry import SampleCollector, sample_to_prom
from rigcheck.engine.report.rows import report_rows
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, Sample
from rigcheck.tui.cli import main
from rigcheck.tui.monitor import monitor

UUIDS = ("8f1c2d3e-0000-4000-8000-00000000000a", "8f1c2d3e-0000-4000-8000-00000000000b")  # as torch stores them
ODD = 'bf16 "4096"\nsecond line \\ end'


def keyed(samples: list[Any]) -> dict[tuple[str, str, str | None], Any]:
    """A figure family's samples by device, figure name and repeat."""
    return {(s.labels["device"], s.labels["name"], s.labels.get("repeat")): s for s in samples}


def parsed(text: str) -> dict[str, list[Any]]:
    """Family name -> its samples, read back by Prometheus' own client."""
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def probe_facts(model: str) -> Facts:
    devices = [{"index": i, "name": "NVIDIA H200", "vendor": "NVIDIA", "uuid": uuid} for i, uuid in enumerate(UUIDS)]
    return Facts("probe", {"devices": devices, "cpu": {"model": model}})


def figure(name: str, value: float, device: str, trust: str | None) -> Measurement:
    index = device.removeprefix("cuda:")
    params = {"gpu_uuid": UUIDS[int(index)]} if device.startswith("cuda") else {}
    conditions = {"trust": trust, "gpu_name": "NVIDIA H200"} if trust else {}
    return Measurement("matmul", name, value, "TFLOP/s", device=device, params=params, conditions=conditions)


def local_run(store: Store) -> int:
    run_id = store.begin_run(["probe", "matmul"], "all", "quick", "python3", [], gpus=("cuda:0", "cuda:1"))
    store.record(run_id, probe_facts("AMD EPYC 9654"))
    for event in (
        figure("bf16 4096", 771.5, "cuda:0", "TRUSTED"),
        figure("bf16 4096", 690.25, "cuda:1", "SUSPECT"),
        figure("bf16 4096", 702.0, "cuda:1", "SUSPECT"),  # the same figure again: needs its own series
        figure("fp32 1024", 1.375, "cpu", None),
        figure(ODD, 3.5, "cpu", "NOISY"),
        Verdict("matmul", "limits", Status.PASS, "fine", device="cuda:0"),
        Verdict("matmul", "peers", Status.WARN, "cuda:1 11% below", device="cuda:1"),
        Verdict("matmul", "peers", Status.WARN, "cuda:1 12% below", device="cuda:1"),
        Verdict("probe", "build", Status.PASS, "torch"),
    ):
        store.record(run_id, event)
    store.end_run(run_id, "complete", 0)
    return run_id


def test_a_run_on_two_gpus_and_the_cpu_reads_back_with_dcgm_labels(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    report = store.report(local_run(store))
    assert report is not None
    families = parsed(report_to_prom(report))
    assert set(families) >= {
        "rigcheck_run_info",
        "rigcheck_run_finished_timestamp_seconds",
        "rigcheck_figure",
        "rigcheck_figure_trusted",
        "rigcheck_verdict",
    }
    stored = [row for row in report_rows(report) if row["kind"] == "measurement"]
    figures = families["rigcheck_figure"]
    assert sorted(s.value for s in figures) == sorted(row["value"] for row in stored)
    assert len({tuple(sorted(s.labels.items())) for s in figures}) == len(figures)  # no series twice
    host = report["run"]["host"]
    for sample in figures:
        labels = sample.labels
        assert labels["hostname"] == host and labels["stage"] == "matmul" and labels["unit"] == "TFLOP/s"
        if labels["device"].startswith("cuda:"):
            index = labels["device"].removeprefix("cuda:")
            assert labels["gpu"] == index and labels["uuid"] == f"GPU-{UUIDS[int(index)]}"
            assert labels["model_name"] == "NVIDIA H200"
        else:
            assert "gpu" not in labels and "uuid" not in labels and labels["model_name"] == "AMD EPYC 9654"
    by_name = keyed(figures)
    assert by_name[("cuda:1", "bf16 4096", "2")].value == 702.0  # the stored second figure, apart from the first
    assert all("trust" not in s.labels for s in figures)  # trust is a gauge of its own, not a label
    trust = {key: s.value for key, s in keyed(families["rigcheck_figure_trust"]).items()}
    assert trust == {
        ("cuda:0", "bf16 4096", None): TRUST_CODES["TRUSTED"],
        ("cuda:1", "bf16 4096", None): TRUST_CODES["SUSPECT"],
        ("cuda:1", "bf16 4096", "2"): TRUST_CODES["SUSPECT"],
        ("cpu", "fp32 1024", None): TRUST_CODES["no telemetry"],
        ("cpu", ODD, None): TRUST_CODES["NOISY"],
    }
    trusted = {key: s.value for key, s in keyed(families["rigcheck_figure_trusted"]).items()}
    assert trusted == {key: float(code == 0) for key, code in trust.items()}
    for family in ("rigcheck_figure_trust", "rigcheck_figure_trusted"):  # the same series as the figure's
        labels = {key: s.labels for key, s in keyed(families[family]).items()}
        assert labels == {key: s.labels for key, s in by_name.items()}
    verdicts = {
        (s.labels["stage"], s.labels["check"], s.labels["status"], s.labels.get("gpu")): s.value
        for s in families["rigcheck_verdict"]
    }
    assert verdicts == {
        ("matmul", "limits", "PASS", "0"): 1,
        ("matmul", "peers", "WARN", "1"): 2,
        ("probe", "build", "PASS", None): 1,
    }
    (info,) = families["rigcheck_run_info"]
    assert info.labels["run"] == str(report["run"]["id"]) and info.labels["status"] == "complete"
    assert families["rigcheck_run_finished_timestamp_seconds"][0].value == report["run"]["finished"]


def test_a_label_with_quotes_backslashes_and_newlines_round_trips(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    report = store.report(local_run(store))
    assert report is not None
    text = report_to_prom(report)
    assert ODD not in text  # escaped, not written raw
    names = {s.labels["name"] for s in parsed(text)["rigcheck_figure"]}
    assert ODD in names


def test_the_library_writes_both_files_from_collectors_that_fit_any_registry(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    report = store.report(local_run(store))
    assert report is not None
    (sample,) = gpu_samples(1)
    global_names = {family.name for family in REGISTRY.collect()}
    texts = {"run": report_to_prom(report), "sample": sample_to_prom(sample, "node-a", "AMD EPYC 9654")}
    assert {family.name for family in REGISTRY.collect()} == global_names  # a registry of its own each time
    registry = CollectorRegistry()
    registry.register(RunCollector(report))
    assert generate_latest(registry).decode() == texts["run"]
    registry = CollectorRegistry()
    registry.register(SampleCollector(sample, "node-a", "AMD EPYC 9654"))
    assert generate_latest(registry).decode() == texts["sample"]
    for text in texts.values():
        families = list(text_string_to_metric_families(text))
        assert families and all(family.type == "gauge" and family.samples for family in families)
        assert text.count("# TYPE ") == len(families)  # an empty family is left out, HELP and TYPE too
    assert "# TYPE rigcheck_run_info gauge\n" in texts["run"]  # the info family keeps the name it always had


def test_a_gpu_and_host_label_with_quotes_backslashes_and_newlines_round_trips() -> None:
    gpu = GpuSample(0, ODD, "NVIDIA", "nvml", sm_clock_mhz=1980.0, uuid="GPU-0", pci_bus_id="0000:1b:00.0")
    sample = Sample(1_000_000.5, HostSample(cpus=4, load1=None, busy_cpus=1.0, own_cpus=0.5), (gpu,))
    text = sample_to_prom(sample, 'host "a"\\b', ODD)
    assert ODD not in text  # escaped, not written raw
    families = parsed(text)
    (clock,) = families["rigcheck_gpu_sm_clock_hertz"]
    assert clock.labels == {
        "gpu": "0",
        "uuid": "GPU-0",
        "pci_bus_id": "0000:1b:00.0",
        "model_name": ODD,
        "hostname": 'host "a"\\b',
    }
    assert clock.value == 1.98e9
    assert families["rigcheck_host_cpus"][0].labels == {"hostname": 'host "a"\\b', "model_name": ODD}
    assert families["rigcheck_monitor_sample_timestamp_seconds"][0].value == 1_000_000.5
    assert "rigcheck_host_load1" not in families


def test_a_fleet_run_labels_each_host_s_figures_with_its_name(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    fleet = {"id": "f1", "hosts": ["node-a", "node-b"], "states": {"node-a": "done", "node-b": "lost"}}
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], fleet)
    for host, value in (("node-a", 771.5), ("node-b", 640.0)):
        store.record(run_id, probe_facts(f"CPU of {host}"), host=host)
        store.record(run_id, figure("bf16 4096", value, "cuda:0", "TRUSTED"), host=host)
        store.record(run_id, figure("fp32 1024", value / 500, "cpu", "TRUSTED"), host=host)
        store.record(run_id, Verdict("matmul", "limits", Status.PASS, "fine", device="cuda:0"), host=host)
    report = store.report(run_id)
    assert report is not None
    families = parsed(report_to_prom(report))
    values = {(s.labels["hostname"], s.labels["device"]): s for s in families["rigcheck_figure"]}
    for row in report_rows(report):
        if row["kind"] == "measurement":
            assert values[(row["host"], row["device"])].value == row["value"]
    assert {values[(h, "cpu")].labels["model_name"] for h in fleet["hosts"]} == {"CPU of node-a", "CPU of node-b"}
    assert {values[(h, "cuda:0")].labels["uuid"] for h in fleet["hosts"]} == {f"GPU-{UUIDS[0]}"}
    assert {s.labels["hostname"] for s in families["rigcheck_verdict"]} == set(fleet["hosts"])
    hosts = {s.labels["hostname"]: (s.labels["rank"], s.labels["state"]) for s in families["rigcheck_fleet_host_info"]}
    assert hosts == {"node-a": ("0", "done"), "node-b": ("1", "lost")}
    assert families["rigcheck_run_info"][0].labels["fleet"] == "f1"


def test_export_to_a_file_writes_it_whole_through_a_rename_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_path = tmp_path / "s.db"
    local_run(Store(store_path))
    out = tmp_path / "out" / "rigcheck.prom"
    out.parent.mkdir()
    renames: list[tuple[Path, str]] = []
    real_replace = os.replace

    def replace(source: str, target: str) -> None:
        renames.append((Path(source), Path(source).read_text()))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    assert main(["export", "last", "--format", "prom", "-o", str(out), "--store", str(store_path)]) == 0
    ((temp, text),) = renames
    assert temp.parent == out.parent and not temp.name.endswith(".prom")  # the textfile collector skips it
    assert out.read_text() == text and parsed(text)["rigcheck_figure"]
    assert os.listdir(out.parent) == ["rigcheck.prom"]  # no temporary file left


def test_a_write_that_fails_midway_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "rigcheck.prom"
    write_atomic(target, "old 1\n")
    os.chmod(target, 0o640)

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        write_atomic(target, "new 2\n" * 10_000)
    assert target.read_text() == "old 1\n" and os.listdir(tmp_path) == ["rigcheck.prom"]
    monkeypatch.undo()
    write_atomic(target, "new 2\n")
    assert target.read_text() == "new 2\n" and target.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


def gpu_samples(count: int) -> list[Sample]:
    """Two H200s held at the power cap and hot, whose power sensor does not answer."""
    nvml = FakeNvml(reasons=0x4 | 0x20, broken=("power",), bus_ids=(b"00000000:1B:00.0", b"00000000:2C:00.0"))
    host = HostSample(cpus=16, load1=2.5, busy_cpus=3.0, own_cpus=1.0, cpu_mhz=3100.0)
    # 3 s apart: the monitor holds its first shown sample up to 2.6 s until the busy processes are named
    return [Sample(1_000_000.0 + 3 * t, host, tuple(NvmlSource(nvml).read())) for t in range(count)]


def test_monitor_keeps_a_textfile_that_parses_and_leaves_missing_readings_out(tmp_path: Path) -> None:
    samples = gpu_samples(4)
    target = tmp_path / "rigcheck.prom"
    assert monitor(0.1, 2, False, sampler=StartingSampler(samples), prom_file=target) == 0
    families = parsed(target.read_text())
    assert families["rigcheck_monitor_sample_timestamp_seconds"][0].value == samples[2].t  # the count-th after priming
    assert "rigcheck_gpu_power_watts" not in families  # N/A, never 0
    gpus = samples[2].gpus
    clocks = {s.labels["gpu"]: s for s in families["rigcheck_gpu_sm_clock_hertz"]}
    assert set(clocks) == {str(g.index) for g in gpus}
    for gpu in gpus:
        labels = clocks[str(gpu.index)].labels
        assert (labels["uuid"], labels["model_name"], labels["pci_bus_id"]) == (gpu.uuid, gpu.name, gpu.pci_bus_id)
        assert clocks[str(gpu.index)].value == gpu.sm_clock_mhz * 1e6
    used = {s.labels["gpu"]: s.value for s in families["rigcheck_gpu_memory_used_bytes"]}
    assert used == {str(g.index): g.memory_used for g in gpus}
    reasons = {(s.labels["gpu"], s.labels["reason"]) for s in families["rigcheck_gpu_clock_event_reason"]}
    assert reasons == {(str(g.index), r) for g in gpus for r in g.throttle} and len(reasons) == 4
    assert families["rigcheck_host_others_cpus"][0].value == samples[2].host.others_cpus
    assert "rigcheck_host_package_power_watts" not in families
    assert os.listdir(tmp_path) == ["rigcheck.prom"]


def test_monitor_replaces_its_textfile_whole_each_sample_through_a_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = gpu_samples(4)
    target = tmp_path / "rigcheck.prom"
    renames: list[tuple[Path, Path, str]] = []
    real_replace = os.replace

    def replace(source: str, destination: str) -> None:
        renames.append((Path(source), Path(destination), Path(source).read_text()))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    assert monitor(0.1, 3, False, sampler=StartingSampler(samples), prom_file=target) == 0
    assert [destination for _, destination, _ in renames] == [target] * 3  # once a sample, the priming one not
    for (temp, _, text), sample in zip(renames, samples[1:], strict=True):
        assert temp.parent == target.parent and not temp.name.endswith(".prom")  # the textfile collector skips it
        assert parsed(text)["rigcheck_monitor_sample_timestamp_seconds"][0].value == sample.t  # whole, and parses
    assert target.read_text() == renames[-1][2] and os.listdir(tmp_path) == ["rigcheck.prom"]


def test_monitor_whose_folder_goes_away_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "gone" / "rigcheck.prom"
    assert monitor(0.1, 2, False, sampler=StartingSampler(gpu_samples(3)), prom_file=gone) == EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(gone) in err and "Traceback" not in err


@pytest.mark.parametrize("make", ["missing", "a file", "json too"])
def test_a_bad_textfile_folder_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str
) -> None:
    folder = tmp_path / "textfile"
    if make == "a file":
        folder.write_text("")
    if make == "json too":
        folder.mkdir()
    argv = ["monitor", "--prom-textfile", str(folder), "--count", "1", *(["--json"] if make == "json too" else [])]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("rigcheck: ") and "--prom-textfile" in err
    assert not (folder / "rigcheck.prom").exists()


def every_file(tmp_path: Path) -> dict[str, str]:
    """Each kind of file rigcheck writes for Prometheus: a run, a --strict run, a fleet run and monitor's textfile."""
    store = Store(tmp_path / "s.db")
    strict = local_run(store)
    store.record_strict(strict, 1)
    fleet = {"id": "f1", "hosts": ["node-a", "node-b"], "states": {"node-a": "done", "node-b": "lost"}}
    fleet_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], fleet)
    for host in fleet["hosts"]:
        store.record(fleet_id, probe_facts(f"CPU of {host}"), host=host)
        store.record(fleet_id, figure("bf16 4096", 771.5, "cuda:0", "TRUSTED"), host=host)
        store.record(fleet_id, Verdict("matmul", "limits", Status.PASS, "fine", device="cuda:0"), host=host)
    textfile = tmp_path / "rigcheck.prom"
    assert monitor(0.1, 1, False, sampler=StartingSampler(gpu_samples(2)), prom_file=textfile) == 0
    texts = {"textfile": textfile.read_text()}
    for name, run_id in (("run", local_run(store)), ("strict run", strict), ("fleet run", fleet_id)):
        report = store.report(run_id)
        assert report is not None
        texts[name] = report_to_prom(report)
    return texts


def test_promtool_check_metrics_passes_every_file(tmp_path: Path) -> None:
    for name, text in every_file(tmp_path).items():
        done = promtool_check(text)
        assert done.returncode == 0 and not done.stdout + done.stderr, (name, done.stdout + done.stderr)
    camel = 'rigcheck_gpu_power_watts{gpu="0",modelName="NVIDIA H200"} 1'  # dcgm-exporter's label, as before
    refused = promtool_check(
        f"# HELP rigcheck_gpu_power_watts Power.\n# TYPE rigcheck_gpu_power_watts gauge\n{camel}\n"
    )
    assert refused.returncode != 0 and "snake_case" in refused.stdout + refused.stderr


def test_every_file_keeps_to_promtools_naming_rules_in_python(tmp_path: Path) -> None:
    for name, text in every_file(tmp_path).items():
        assert prom_lint_problems(text) == [], name
    camel = '# HELP a_b A.\n# TYPE a_b gauge\na_b{Hostname="x",modelName="y"} 1\n'
    assert prom_lint_problems(camel) == ["a_b label Hostname: not snake_case", "a_b label modelName: not snake_case"]


@pytest.mark.parametrize("name", ["modelName", "UUID", "Hostname", "__name"])
def test_a_label_name_that_is_not_snake_case_is_an_error_not_a_file(name: str) -> None:
    with pytest.raises(ValueError, match="snake_case"):
        kept_labels({name: "x"})


def test_a_figure_keeps_one_series_when_its_trust_changes(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    series = []
    for trust in ("TRUSTED", "SUSPECT", "NOISY"):
        run_id = store.begin_run(["matmul"], "cuda:0", "quick", "python3", [])
        store.record(run_id, figure("bf16 4096", 700.0, "cuda:0", trust))
        store.end_run(run_id, "complete", 0)
        report = store.report(run_id)
        assert report is not None
        families = parsed(report_to_prom(report))
        (sample,) = families["rigcheck_figure"]
        (code,) = families["rigcheck_figure_trust"]
        assert code.labels == sample.labels and code.value == TRUST_CODES[trust]
        series.append(sample.labels)
    assert series[0] == series[1] == series[2]


def test_a_strict_run_says_the_exit_code_it_returned_and_its_failures(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    relaxed, strict = local_run(store), local_run(store)
    store.record_strict(strict, 1)
    values = {}
    for run_id in (relaxed, strict):
        report = store.report(run_id)
        assert report is not None
        families = parsed(report_to_prom(report))
        values[run_id] = [families[f"rigcheck_run_{name}"][0].value for name in ("exit_code", "strict", "failures")]
    assert values == {relaxed: [0, 0, 0], strict: [1, 1, 2]}  # the two WARN verdicts fail a --strict run
