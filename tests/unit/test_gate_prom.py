"""Health verdicts as gauges: `export --format prom` and the monitor's textfile carry each check's result with
dcgm-exporter's GPU labels, the gate's state and the age of the run, and promtool takes the file."""

from __future__ import annotations

import re

from consumers import prom_lint_problems, promtool_check
from gate_fakes import Node, gate_library_fixture, node_fixture  # noqa: F401 - fixtures
from rigcheck.engine.report.prom import report_to_prom
from rigcheck.engine.report.prom_health import latest_health_run
from rigcheck.engine.report.prom_telemetry import sample_to_prom
from rigcheck.engine.telemetry.sample import HostSample, Sample


def series(text: str, name: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M)}


def test_a_gate_run_exports_each_check_as_a_gauge_joinable_with_dcgm(node: Node) -> None:
    node.faults(remap_pending1=1)
    result = node.check(expect=2)
    text = report_to_prom(node.store.report(result.run_id))
    checks = series(text, "rigcheck_health_check")
    remap = [labels for labels in checks if 'check="row-remap"' in labels and 'device="nvml:1"' in labels]
    assert len(remap) == 1 and checks[remap[0]] == 1.0  # WARN
    for label in ('gpu="1"', 'uuid="GPU-00000000-0000-0000-0000-000000000001"', 'pci_bus_id="0000:19:00.0"'):
        assert label in remap[0]
    clean = [labels for labels in checks if 'check="row-remap"' in labels and 'device="nvml:0"' in labels]
    assert checks[clean[0]] == 0.0
    assert list(series(text, "rigcheck_gate_state").values()) == [1.0]
    (age,) = series(text, "rigcheck_health_age_seconds").values()
    assert 0 <= age < 600
    assert prom_lint_problems(text) == []
    done = promtool_check(text)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_monitor_textfile_carries_the_newest_health_run(node: Node) -> None:
    node.check(expect=2)
    node.faults(gpus=1)
    newest = node.check(expect=2)
    assert latest_health_run(node.store) == newest.run_id
    sample = Sample(1_000_000.0, HostSample(cpus=4, load1=None, busy_cpus=1.0, own_cpus=0.5), ())
    text = sample_to_prom(sample, "node-a", "", node.store.report(newest.run_id))
    assert list(series(text, "rigcheck_gate_state").values()) == [2.0]
    count = [v for k, v in series(text, "rigcheck_health_check").items() if 'check="gpu-count"' in k]
    assert count == [2.0] and 'hostname="node-a"' in text
    assert "rigcheck_health_check" not in sample_to_prom(sample, "node-a", "")
    done = promtool_check(text)
    assert done.returncode == 0, done.stdout + done.stderr


def test_monitor_writes_the_newest_health_run_and_never_makes_a_store(node: Node, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fakes import StartingSampler
    from rigcheck.tui.cli_gate import health_source
    from rigcheck.tui.monitor import monitor

    node.faults(persistence0=0)
    node.check(expect=2)
    host = HostSample(cpus=4, load1=None, busy_cpus=1.0, own_cpus=0.5)
    samples = [Sample(1_000_000.0 + 3 * i, host, ()) for i in range(3)]  # 3 s apart: past the naming wait
    target = tmp_path / "rigcheck.prom"
    health = health_source(str(node.store.path))
    assert monitor(0.1, 2, False, sampler=StartingSampler(samples), prom_file=target, health=health) == 0
    assert list(series(target.read_text(), "rigcheck_gate_state").values()) == [1.0]
    absent = tmp_path / "none" / "store.db"
    assert health_source(str(absent))() is None and not absent.parent.exists()
