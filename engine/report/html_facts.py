"""The HTML report's facts: the run itself, and what Probe found (host, versions, CPU, devices, environment).

Probe's facts are read defensively: a run from an older rigcheck, or a probe that crashed, lacks some, and a
missing fact is left out, never shown as an error.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from typing import Any

from rigcheck.engine.report.fleet_view import fleet_label
from rigcheck.engine.report.html_tables import esc, status, table

GIB = 1024**3


def _when(t: Any) -> str:
    if not isinstance(t, int | float):
        return ""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(run: dict[str, Any]) -> str:
    start, end = run.get("started"), run.get("finished")
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return "not finished"
    seconds = max(0, round(end - start))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _pairs(pairs: list[tuple[str, str]]) -> str:
    """A two-column table of facts whose values are already HTML; empty ones left out."""
    return table(["fact", "value"], [[esc(k), v] for k, v in pairs if v], "facts")


def run_facts(report: dict[str, Any]) -> str:
    run = report["run"]
    argv = run.get("argv") or []
    return _pairs(
        [
            ("run", esc(run.get("id"))),
            ("status", f"{status(str(run.get('status')))} (exit code {esc(run.get('exit_code'))})"),
            ("host", esc(run.get("host"))),
            ("device", esc(fleet_label(run))),
            ("profile", esc(run.get("profile"))),
            ("stages", esc(", ".join(map(str, run.get("stages") or [])))),
            ("started", esc(_when(run.get("started")))),
            ("took", esc(_duration(run))),
            ("command", f"<code>rigcheck {esc(shlex.join(map(str, argv)))}</code>" if argv else ""),
            ("python", esc(run.get("python"))),
            ("environment fingerprint", esc(report["fingerprint"].get("digest") or "")),
            ("telemetry samples", esc(report.get("telemetry_samples"))),
            ("error", esc(run.get("error") or "")),
        ]
    )


def _versions(probe: dict[str, Any]) -> list[tuple[str, str]]:
    torch = probe.get("torch") or {}
    interp = probe.get("interpreter") or {}
    driver = probe.get("driver") or {}
    dnn = f"{torch.get('dnn_library') or ''} {torch.get('dnn_version_text') or torch.get('dnn_version') or ''}"
    blas = [
        " ".join(str(b.get(k)) for k in ("internal_api", "version", "architecture") if b.get(k))
        for b in probe.get("blas") or []
        if isinstance(b, dict)
    ]
    return [
        ("python", esc(f"{interp.get('implementation') or ''} {interp.get('version') or ''}".strip())),
        ("torch", esc(f"{torch.get('torch') or ''} ({torch.get('build')})" if torch.get("build") else "")),
        ("CUDA", esc(torch.get("cuda") or "")),
        ("HIP", esc(torch.get("hip") or "")),
        ("DNN library", esc(dnn.strip() if torch.get("dnn_version") else "")),
        ("driver", esc(" ".join(str(driver[k]) for k in ("vendor", "version") if driver.get(k)))),
        ("numpy", esc(probe.get("numpy") or "")),
        ("torch BLAS", esc(torch.get("blas_info") or "")),
        ("loaded BLAS", esc("; ".join(blas))),
        ("no GPU because", esc(probe.get("no_gpu_reason") or "")),
    ]


def _cpu(probe: dict[str, Any]) -> list[tuple[str, str]]:
    cpu = probe.get("cpu") or {}
    counts = f"{cpu.get('logical_cpus')} logical, {cpu.get('physical_cores')} cores, {cpu.get('usable_cpus')} usable"
    return [
        ("CPU", esc(cpu.get("model") or "")),
        ("CPUs", esc(counts if cpu.get("logical_cpus") else "")),
        ("CPU clock max", esc(f"{cpu['max_mhz']:,.0f} MHz" if isinstance(cpu.get("max_mhz"), int | float) else "")),
        ("governor", esc(cpu.get("governor") or "")),
        ("CPU features", esc(", ".join(map(str, cpu.get("flags") or [])))),
        ("kernel", esc(cpu.get("kernel") or "")),
        ("OS", esc(cpu.get("os") or "")),
    ]


def _gib(value: Any) -> str:
    return f"{value / GIB:,.1f} GiB" if isinstance(value, int | float) else ""


def _devices(probe: dict[str, Any]) -> str:
    devices = [d for d in probe.get("devices") or [] if isinstance(d, dict)]
    if not devices:
        return ""
    rows = [
        [
            esc(d.get("index")),
            esc(d.get("name")),
            esc(d.get("arch") or d.get("compute_capability") or ""),
            esc(f"{d.get('multiprocessors')} {d.get('multiprocessor_kind') or ''}" if d.get("multiprocessors") else ""),
            esc(_gib(d.get("memory_torch_total"))),
            esc(_gib(d.get("memory_driver_total"))),
            esc(d.get("pci") or ""),
            esc(d.get("uuid") or ""),
        ]
        for d in devices
    ]
    return table(["index", "name", "arch", "units", "memory (torch)", "memory (driver)", "PCI", "UUID"], rows)


def _environment(probe: dict[str, Any]) -> str:
    env = probe.get("environment") or {}
    if not isinstance(env, dict) or not env:
        return '<p class="small">No environment variable that changes results was set.</p>'
    return table(["variable", "value"], [[f"<code>{esc(k)}</code>", esc(v)] for k, v in sorted(env.items())])


def probe_facts(probe: dict[str, Any] | None) -> str:
    """What Probe found on one host: versions, CPU, devices, environment variables."""
    if not probe:
        return "<p>Probe did not run in this run, so the versions and devices are not known.</p>"
    parts = [_pairs(_versions(probe) + _cpu(probe)), _devices(probe), _environment(probe)]
    return "\n".join(p for p in parts if p)


def host_facts(report: dict[str, Any]) -> str:
    """This host's probe facts, then (a fleet run) each host's under its name."""
    others = report.get("host_facts") or {}
    out = [probe_facts(report["facts"].get("probe"))] if report["facts"].get("probe") or not others else []
    for host, facts in sorted(others.items()):
        out.append(f"<h3>host {esc(host)}</h3>\n{probe_facts((facts or {}).get('probe'))}")
    return "\n".join(out)
