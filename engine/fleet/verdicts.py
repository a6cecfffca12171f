"""Rank 0's verdicts over the whole fleet once every agent has finished or is lost: peers across hosts,
probe differences, and the pairwise links."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Measurement, Verdict
from rigcheck.engine.fleet.compare_hosts import fleet_peer_verdicts
from rigcheck.engine.fleet.links import pair_verdicts
from rigcheck.engine.fleet.probe_differences import probe_differences


def stored_figure(row: dict[str, Any]) -> Measurement:
    """A figure as the store gave it back, as the event it was."""
    return Measurement(
        row["stage"],
        row["name"],
        row["value"],
        row["unit"] or "",
        row["spread"],
        row["repeats"] or 1,
        row["device"] or "",
        row["params"] or {},
        row["conditions"] or {},
        t=row["t"] or 0.0,
    )


def fleet_verdicts(
    report: dict[str, Any], fingerprints: dict[str, tuple[str, dict[str, Any]]]
) -> list[tuple[str, Verdict]]:
    """(host the verdict is about, or '' for the fleet, verdict) for every finding across hosts."""
    figures = [(row["host"], stored_figure(row)) for row in report["measurements"] if row["host"]]
    stage_figures = [(host, m) for host, m in figures if m.stage != "fleet-links"]
    pairs = [m for _, m in figures if m.stage == "fleet-links" and m.params.get("pair")]
    probes = {host: facts.get("probe", {}) for host, facts in report["host_facts"].items()}
    lost = {host for host, state in ((report.get("fleet") or {}).get("states") or {}).items() if state == "lost"}
    for host in (report.get("fleet") or {}).get("hosts", []):
        if host not in probes and host not in lost:
            probes[host] = {}
    cpu_models = {
        host: str(probe["cpu"]["model"]) for host, probe in probes.items() if probe.get("cpu", {}).get("model")
    }
    return [
        *fleet_peer_verdicts(stage_figures, cpu_models=cpu_models),
        *probe_differences(probes, fingerprints),
        *pair_verdicts(pairs),
    ]
