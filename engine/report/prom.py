"""A stored run as Prometheus text (exposition format 0.0.4), its GPUs labelled as dcgm-exporter labels them, in
snake_case (`hostname`, `gpu`, `uuid`, `pci_bus_id`, `model_name`: promtool's lint refuses dcgm's `modelName`).

The families are prometheus_client's, gathered by a collector in a registry of their own (never the
process-wide one) and written by its `generate_latest`. Figures carry no run number: a figure keeps one
series from run to run, and `rigcheck_run_info` says which run the file holds. Empty label values are left
out (Prometheus treats both alike), and so is any figure without a value: a missing reading is never
written as 0, and a family with no samples is not written at all. A figure's trust is a gauge of its own, not
a label, so a figure keeps one series when its trust changes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from rigcheck.engine.events import NO_TELEMETRY_CODE, Trust
from rigcheck.engine.report.failures import failures, is_strict
from rigcheck.engine.report.fleet_view import gpu_index
from rigcheck.engine.report.prom_families import Gauge, Info, Labels
from rigcheck.engine.report.rows import NO_TELEMETRY, Row, report_rows, trust_of

# rigcheck_figure_trust's value for each trust word, worse the higher; a word added later is -1 until it is listed
_CODES = {t.value: t.code for t in Trust} | {NO_TELEMETRY: NO_TELEMETRY_CODE}
TRUST_CODES = dict(sorted(_CODES.items(), key=lambda item: item[1]))
TRUST_HELP = ", ".join(f"{code} {word}" for word, code in TRUST_CODES.items())

_BARE_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def with_samples(families: Iterable[Metric]) -> Iterator[Metric]:
    """The families that have samples: the library would write # HELP and # TYPE for an empty one too."""
    return (family for family in families if family.samples)


def render(collector: Collector) -> str:
    """The exposition text of one collector, through a registry made for this call alone."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode("utf-8")


def dcgm_uuid(uuid: str | None, vendor: str | None) -> str | None:
    """NVML's form, "GPU-<uuid>", which dcgm-exporter and rigcheck monitor write; torch stores it bare.
    Only an NVIDIA GPU gets the prefix; any other UUID is kept as it was stored."""
    if not uuid:
        return None
    if vendor == "NVIDIA" and _BARE_UUID.match(uuid):
        return f"GPU-{uuid}"
    return uuid


def _probe(report: dict[str, Any], host: str) -> dict[str, Any]:
    """Probe's facts for the row's host (a fleet run keeps each host's apart), or {} where Probe did not run."""
    facts = (report.get("host_facts") or {}).get(host, {}) if host else report.get("facts") or {}
    return facts.get("probe") or {}


def run_hostname(report: dict[str, Any]) -> str:
    """The run's host as the fleet names it (rank 0's RIGCHECK_NODE_NAME), else as the machine does."""
    return str((report.get("fleet") or {}).get("rank0") or report["run"].get("host") or "")


def device_labels(row: Row, report: dict[str, Any]) -> Labels:
    """hostname, gpu, uuid, pci_bus_id, device and model_name of the device a row is about.

    The store has no per-GPU identity for a verdict; Probe's facts of the same run (and host) give it by
    torch index, so those are read here rather than added to the rows."""
    host = row.get("host") or ""
    device = row.get("device") or ""
    params, conditions = row.get("params") or {}, row.get("conditions") or {}
    probe = _probe(report, host)
    labels: Labels = {"hostname": host or run_hostname(report)}
    index = gpu_index(device)
    if index is not None:
        gpu = str(index)
        known: dict[str, Any] = next((d for d in probe.get("devices") or [] if str(d.get("index")) == gpu), {})
        model = conditions.get("gpu_name") or params.get("gpu_name") or known.get("name") or ""
        vendor = known.get("vendor") or ("NVIDIA" if "NVIDIA" in model.upper() else None)
        uuid = params.get("gpu_uuid") or conditions.get("gpu_uuid") or known.get("uuid")
        bus = params.get("pci_bus_id") or conditions.get("gpu_pci_bus_id") or known.get("pci")
        labels |= {"gpu": gpu, "uuid": dcgm_uuid(uuid, vendor) or "", "pci_bus_id": bus or "", "model_name": model}
    elif device == "cpu":
        model = (probe.get("cpu") or {}).get("model") or ""
        labels["model_name"] = "" if model == "unknown" else model
    return labels | {"device": device}


def _figure_labels(row: Row, report: dict[str, Any]) -> Labels:
    return device_labels(row, report) | {
        "stage": row["stage"],
        "name": row["name"],
        "unit": row.get("unit") or "",
    }


def _run_families(report: dict[str, Any]) -> list[Metric]:
    run = report["run"]
    fleet = report.get("fleet") or {}
    info = Info("rigcheck_run", "The run this file describes: always 1, its facts in the labels.")
    info.add(
        {
            "hostname": run_hostname(report),
            "run": run["id"],
            "status": run.get("status") or "",
            "profile": run.get("profile") or "",
            "device": run.get("device") or "",
            "fingerprint": run.get("fingerprint") or "",
            "fleet": fleet.get("id") or "",
        }
    )
    started = Gauge("rigcheck_run_started_timestamp_seconds", "When the run started, in Unix seconds.")
    started.add({}, run.get("started"))
    finished = Gauge(
        "rigcheck_run_finished_timestamp_seconds", "When the run ended, in Unix seconds (absent while it runs)."
    )
    finished.add({}, run.get("finished"))
    exit_code = Gauge(
        "rigcheck_run_exit_code",
        "The exit code the run returned: 0 every verdict PASS, WARN or SKIP; 1 a FAIL, or a WARN under --strict; "
        "3 a CRASH or TIMEOUT; 4 the store could not be written; 7 an INCONCLUSIVE (a figure that could not be "
        "judged) with none of those; 130 stopped.",
    )
    exit_code.add({}, run.get("exit_code"))
    strict = Gauge("rigcheck_run_strict", "1 where the run was made with --strict (a WARN fails it), else 0.")
    strict.add({}, is_strict(report))
    failed = Gauge(
        "rigcheck_run_failures", "The verdicts that fail the run: each FAIL, and each WARN of a run made with --strict."
    )
    failed.add({}, len(failures(report)))
    hosts = Info("rigcheck_fleet_host", "Each host of a fleet run: always 1, its rank and last state in the labels.")
    for rank, host in enumerate(fleet.get("hosts") or []):
        hosts.add({"hostname": host, "rank": rank, "state": (fleet.get("states") or {}).get(host, "")})
    return [info, started, finished, exit_code, strict, failed, hosts]


def _figure_families(report: dict[str, Any]) -> list[Metric]:
    figure = Gauge(
        "rigcheck_figure",
        "A figure rigcheck measured, in the unit its unit label names (its trust: rigcheck_figure_trust). "
        "A figure measured more than once in a run has a repeat label from the second on.",
    )
    trusted = Gauge("rigcheck_figure_trusted", "1 where the figure is TRUSTED, else 0 (SUSPECT, NOISY, BROKEN, ...).")
    trust = Gauge(
        "rigcheck_figure_trust",
        f"What, if anything, was wrong outside the measurement of the figure, as a code: {TRUST_HELP}; "
        "-1 a trust word this version does not know.",
    )
    verdict = Gauge(
        "rigcheck_verdict",
        "The run's verdicts: 1 for each, its status (PASS, NOT JUDGED, WARN, INCONCLUSIVE, FAIL, CRASH, TIMEOUT, "
        "SKIP) in a label; "
        "where one check gave the same status on the same device more than once, how many times.",
    )
    seen: Counter[tuple[tuple[str, str], ...]] = Counter()
    verdicts: Counter[tuple[tuple[str, str], ...]] = Counter()
    for row in report_rows(report):
        if row["kind"] == "verdict":
            labels = device_labels(row, report) | {"stage": row["stage"], "check": row["name"], "status": row["status"]}
            verdicts[tuple(labels.items())] += 1
            continue
        if row.get("value") is None:
            continue
        labels = _figure_labels(row, report)
        key = tuple(labels.items())
        seen[key] += 1
        if seen[key] > 1:  # two samples with one label set would make the whole file unreadable to Prometheus
            labels["repeat"] = str(seen[key])
        figure.add(labels, row["value"])
        trusted.add(labels, trust_of(row) == Trust.TRUSTED)
        trust.add(labels, TRUST_CODES.get(trust_of(row), -1))
    for key, count in verdicts.items():
        verdict.add(dict(key), count)
    return [figure, trusted, trust, verdict]


class RunCollector(Collector):
    """Every figure and verdict of a stored report (Store.report), read when the registry is collected."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report

    def collect(self) -> Iterator[Metric]:
        from rigcheck.engine.report.prom_health import health_families  # it imports this module's Gauge

        health = health_families(self.report, run_hostname(self.report))
        return with_samples([*_run_families(self.report), *_figure_families(self.report), *health])


def report_to_prom(report: dict[str, Any]) -> str:
    """Every figure and verdict of a stored report (Store.report) as Prometheus text."""
    return render(RunCollector(report))
