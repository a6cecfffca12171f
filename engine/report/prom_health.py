"""Health verdicts as Prometheus gauges: each check's result on each GPU, the gate's state, and the run's age.

Autopilot's `autopilot_health_checks{check,node,...}` is the precedent: one series per check and device, its
value the result. GPU labels are dcgm-exporter's in snake_case (`gpu` is NVML's index, `uuid` "GPU-...",
`pci_bus_id`), so the README's relabel rule joins them with DCGM_FI_* series.

No label carries the run number: a Prometheus series is its labels, and one that changed at each check would
start a new series every few minutes, so an alert rule with `for:` would never fire (issue 43). The run a value
came from is the age gauge's business, not a label's.
"""

from __future__ import annotations

import re
import time
from typing import Any

from prometheus_client.core import Metric
from rigcheck.engine.report.prom_families import Gauge, Labels

STAGE = "health"
STATUS_CODES = {"PASS": 0, "WARN": 1, "FAIL": 2, "SKIP": 3, "TIMEOUT": 4, "CRASH": 4}
STATUS_HELP = "0 PASS, 1 WARN, 2 FAIL, 3 not checked (SKIP), 4 the check crashed or timed out"
GATE_CODES = {"OK": 0, "WARN": 1, "CRITICAL": 2, "UNKNOWN": 3}
_DRIVER_INDEX = re.compile(r"^(?:nvml|amdgpu):(\d+)$")


def _gpus(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The health facts' GPUs by the device name their verdicts carry ("nvml:1", "cuda:0")."""
    data = (report.get("facts") or {}).get(STAGE) or {}
    return {str(g.get("label")): g for g in data.get("gpus") or [] if isinstance(g, dict)}


def gpu_labels(device: str, gpu: dict[str, Any] | None) -> Labels:
    """dcgm-exporter's identity of one GPU; for "node" (a node-wide check) none."""
    if gpu is None:
        return {}
    match = _DRIVER_INDEX.match(device)
    index = gpu.get("index", match.group(1) if match else None)
    return {
        "gpu": "" if index is None else str(index),
        "uuid": str(gpu.get("uuid") or (gpu.get("extra") or {}).get("uuid") or ""),
        "pci_bus_id": str(gpu.get("bus_id") or ""),
        "model_name": str(gpu.get("name") or ""),
    }


def health_families(report: dict[str, Any], hostname: str, now: float | None = None) -> list[Metric]:
    """Gauges for a run's health verdicts; [] for a run without a health stage."""
    verdicts = [v for v in report.get("verdicts") or [] if v.get("stage") == STAGE and not v.get("host")]
    if not verdicts:
        return []
    run = report["run"]  # its times only: never a label (one series per host, GPU and check)
    gpus = _gpus(report)
    check = Gauge("rigcheck_health_check", f"Each health check's result per device, as a code: {STATUS_HELP}.")
    worst: dict[tuple[tuple[str, str], ...], int] = {}
    for verdict in verdicts:
        device = verdict.get("device") or ""
        labels = {"hostname": hostname, "check": verdict["check_name"], "device": device}
        labels |= gpu_labels(device, gpus.get(device))
        key = tuple(labels.items())
        code = STATUS_CODES.get(verdict["status"], -1)
        worst[key] = max(worst.get(key, code), code)  # one check twice on one device: the worse stands
    for key, code in worst.items():
        check.add(dict(key), code)
    gate = Gauge(
        "rigcheck_gate_state",
        "The passive check's answer: 0 OK, 1 WARN, 2 CRITICAL, 3 UNKNOWN (could not check: never OK).",
    )
    state = ((report.get("facts") or {}).get(STAGE) or {}).get("gate", {}).get("state")
    gate.add({"hostname": hostname}, GATE_CODES.get(state) if state else None)
    age = Gauge(
        "rigcheck_health_age_seconds",
        "Seconds from the end of the run these health results come from to the writing of this file: "
        "a dashboard sees a stale result.",
    )
    ended = run.get("finished") or run.get("started")
    age.add({"hostname": hostname}, None if ended is None else max(0.0, (now or time.time()) - ended))
    return [check, gate, age]


def latest_health_run(store: Any) -> int | None:
    """The newest run of this store that holds health facts (a passive check or a full run's health stage)."""
    rows = store._read(  # the store has no reader for this: one read-only query
        "SELECT run_id FROM facts WHERE stage = ? AND host = '' ORDER BY run_id DESC LIMIT 1", (STAGE,)
    )
    return int(rows[0]["run_id"]) if rows else None
