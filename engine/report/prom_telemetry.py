"""One telemetry sample as Prometheus text, for `monitor --prom-textfile`: dcgm-exporter's GPU labels in snake_case
(engine.report.prom says why), base units.

A collector of prometheus_client gauge families, written by the library (engine.report.prom.render).
Units follow Prometheus' rule (hertz, celsius, watts, bytes, a 0-1 ratio), not the sample's MHz and %.
A reading the sensor did not give is left out, never written as 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from rigcheck.engine.report.prom import render, with_samples
from rigcheck.engine.report.prom_families import Gauge, Labels
from rigcheck.engine.report.prom_health import health_families
from rigcheck.engine.telemetry.sample import GpuSample, Sample

# (metric, help, GpuSample attribute, factor to the metric's unit)
GPU_GAUGES = (
    ("rigcheck_gpu_sm_clock_hertz", "The GPU's SM (shader) clock.", "sm_clock_mhz", 1e6),
    ("rigcheck_gpu_sm_clock_max_hertz", "The highest SM clock the GPU reports.", "max_sm_clock_mhz", 1e6),
    ("rigcheck_gpu_memory_clock_hertz", "The GPU's memory clock.", "mem_clock_mhz", 1e6),
    ("rigcheck_gpu_memory_clock_max_hertz", "The highest memory clock the GPU reports.", "max_mem_clock_mhz", 1e6),
    ("rigcheck_gpu_temperature_celsius", "The GPU's temperature.", "temperature_c", 1.0),
    ("rigcheck_gpu_power_watts", "The GPU's power draw.", "power_w", 1.0),
    ("rigcheck_gpu_power_limit_watts", "The power limit the driver enforces.", "power_limit_w", 1.0),
    ("rigcheck_gpu_utilization_ratio", "Share of the last period the GPU was busy (0 to 1).", "utilization_pct", 0.01),
    ("rigcheck_gpu_memory_used_bytes", "GPU memory in use.", "memory_used", 1.0),
    ("rigcheck_gpu_memory_total_bytes", "GPU memory in all.", "memory_total", 1.0),
    ("rigcheck_gpu_gtt_used_bytes", "GTT (system memory the GPU maps) in use, on AMD.", "gtt_used", 1.0),
    ("rigcheck_gpu_gtt_total_bytes", "GTT (system memory the GPU maps) in all, on AMD.", "gtt_total", 1.0),
)


def gpu_labels(gpu: GpuSample, hostname: str) -> Labels:
    return {
        "gpu": str(gpu.index),
        "uuid": gpu.uuid or "",
        "pci_bus_id": gpu.pci_bus_id or "",
        "model_name": gpu.name,
        "hostname": hostname,
    }


def _families(sample: Sample, hostname: str, cpu_model: str) -> Iterator[Metric]:
    for metric, words, attribute, factor in GPU_GAUGES:
        family = Gauge(metric, words)
        for gpu in sample.gpus:
            value = getattr(gpu, attribute)
            family.add(gpu_labels(gpu, hostname), None if value is None else value * factor)
        yield family
    reasons = Gauge(
        "rigcheck_gpu_clock_event_reason",
        "1 for each reason the driver gives now for holding the GPU's clocks down (NVML's clock event "
        "reasons: power cap, thermal slowdown, idle, ...); a reason not active is absent.",
    )
    for gpu in sample.gpus:
        for reason in gpu.throttle:
            reasons.add(gpu_labels(gpu, hostname) | {"reason": reason}, 1)
    yield reasons
    host = sample.host
    labels = {"hostname": hostname, "model_name": cpu_model}
    for metric, words, value in (
        ("rigcheck_host_load1", "The host's load average over one minute.", host.load1),
        ("rigcheck_host_cpus", "Logical CPUs on the host.", host.cpus),
        ("rigcheck_host_busy_cpus", "CPUs' worth of busy time, every process.", host.busy_cpus),
        ("rigcheck_host_others_cpus", "CPUs' worth of busy time of processes other than rigcheck.", host.others_cpus),
        ("rigcheck_host_own_cpus", "CPUs' worth of busy time of rigcheck and its stage children.", host.own_cpus),
        ("rigcheck_host_cpu_frequency_hertz", "The CPUs' current clock.", _hertz(host.cpu_mhz)),
        ("rigcheck_host_cpu_frequency_max_hertz", "The CPUs' highest clock.", _hertz(host.cpu_max_mhz)),
        ("rigcheck_host_cpu_temperature_celsius", "The CPU's temperature.", host.temperature_c),
        ("rigcheck_host_package_power_watts", "CPU package power (RAPL), all packages.", host.package_power_w),
    ):
        family = Gauge(metric, words)
        family.add(labels, value)
        yield family
    stamp = Gauge("rigcheck_monitor_sample_timestamp_seconds", "When this sample was read, in Unix seconds.")
    stamp.add({"hostname": hostname}, sample.t)
    yield stamp


class SampleCollector(Collector):
    """Every GPU's and the host's readings in one sample, read when the registry is collected."""

    def __init__(
        self, sample: Sample, hostname: str, cpu_model: str = "", health: dict[str, Any] | None = None
    ) -> None:
        self.sample, self.hostname, self.cpu_model, self.health = sample, hostname, cpu_model, health

    def collect(self) -> Iterator[Metric]:
        health = health_families(self.health, self.hostname) if self.health else []
        return with_samples([*_families(self.sample, self.hostname, self.cpu_model), *health])


def sample_to_prom(sample: Sample, hostname: str, cpu_model: str = "", health: dict[str, Any] | None = None) -> str:
    """Every GPU's and the host's readings in one sample as Prometheus text, with the newest health run's
    verdicts and age where `health` (a stored report) is given."""
    return render(SampleCollector(sample, hostname, cpu_model, health))


def _hertz(mhz: float | None) -> float | None:
    return None if mhz is None else mhz * 1e6
