"""The host's own clocks and power: RAPL package energy over time (counter wraps too), the CPU's top frequency."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from fakes import FakePsutil, rapl_tree
from rigcheck.engine.telemetry.host import HostSource, cpu_max_mhz
from rigcheck.engine.telemetry.rapl import RaplPower


def set_energy(root: Path, zone: int, energy: int) -> None:
    (root / f"intel-rapl:{zone}" / "energy_uj").write_text(f"{energy}\n")


def test_package_power_is_the_energy_rise_over_time(tmp_path: Path) -> None:
    now = [10.0]
    root = rapl_tree(tmp_path, {"package-0": 1_000_000})
    rapl = RaplPower(root, clock=lambda: now[0])
    assert rapl.read() is None  # the first reading only primes
    set_energy(root, 0, 1_000_000 + 90_000_000)  # 90 J in 2 s
    now[0] = 12.0
    assert rapl.read() == pytest.approx(45.0)


def test_a_wrapped_counter_still_gives_the_power(tmp_path: Path) -> None:
    now = [0.0]
    root = rapl_tree(tmp_path, {"package-0": 999_000_000}, wrap=1_000_000_000)
    rapl = RaplPower(root, clock=lambda: now[0])
    rapl.read()
    set_energy(root, 0, 29_000_000)  # went past 1000 J to 0, then on: 30 J in all
    now[0] = 1.0
    assert rapl.read() == pytest.approx(30.0)


def test_two_sockets_add_up_and_sub_zones_are_not_counted_twice(tmp_path: Path) -> None:
    now = [0.0]
    root = rapl_tree(tmp_path, {"package-0": 0, "package-1": 0})
    rapl = RaplPower(root, clock=lambda: now[0])
    assert len(rapl.zones) == 2
    rapl.read()
    set_energy(root, 0, 100_000_000)
    set_energy(root, 1, 60_000_000)
    now[0] = 2.0
    assert rapl.read() == pytest.approx(80.0)


def test_unreadable_counters_read_as_unknown(tmp_path: Path) -> None:
    now = [0.0]
    root = rapl_tree(tmp_path, {"package-0": 5})
    rapl = RaplPower(root, clock=lambda: now[0])
    rapl.read()
    (root / "intel-rapl:0" / "energy_uj").unlink()  # as for a user who may not read it
    now[0] = 1.0
    assert rapl.read() is None
    assert RaplPower(tmp_path / "no-powercap").read() is None


def test_cpu_max_from_psutil_else_cpufreq(tmp_path: Path) -> None:
    with_max = SimpleNamespace(cpu_freq=lambda: SimpleNamespace(current=2000.0, max=4500.0))
    assert cpu_max_mhz(with_max, tmp_path) == 4500.0
    vm = SimpleNamespace(cpu_freq=lambda: SimpleNamespace(current=2596.0, max=0.0))
    assert cpu_max_mhz(vm, tmp_path) is None
    (tmp_path / "cpu0" / "cpufreq").mkdir(parents=True)
    (tmp_path / "cpu0" / "cpufreq" / "cpuinfo_max_freq").write_text("5137000\n")
    assert cpu_max_mhz(vm, tmp_path) == pytest.approx(5137.0)


def test_host_samples_carry_package_power_from_the_slow_path(tmp_path: Path) -> None:
    now = [0.0]
    root = rapl_tree(tmp_path, {"package-0": 0})
    host = HostSource(FakePsutil(), root_pid=100, clock=lambda: now[0], powercap_root=root)
    assert host.read().package_power_w is None
    set_energy(root, 0, 50_000_000)
    now[0] = 1.0  # inside the 2 s slow period: the last figure is kept
    assert host.read().package_power_w is None
    now[0] = 2.0
    sample = host.read()
    assert sample.package_power_w == pytest.approx(25.0) and sample.cpu_max_mhz == 5100.0


def test_monitor_line_names_the_cpu_clocks_and_power() -> None:
    from rigcheck.engine.telemetry.sample import HostSample, Sample
    from rigcheck.tui.monitor import format_line

    host = HostSample(4, 1.0, 1.0, 0.0, cpu_mhz=3200.0, cpu_max_mhz=5100.0, temperature_c=71.0, package_power_w=45.5)
    assert format_line(Sample(1.0, host)).endswith("CPU 3200/5100 MHz temp 71 C pkg 45.5 W")
    bare = HostSample(2, None, 0.5, 0.0, cpu_mhz=2596.0)
    assert format_line(Sample(1.0, bare)).endswith("CPU 2596 MHz temp N/A pkg N/A")
