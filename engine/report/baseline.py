"""A stored run as a baseline file (`export RUN --format baseline`): each GPU model's figures (a CPU-only run's CPU
figures under its CPU's model), for `run --baseline` to judge other machines against this known-good one (or
fleet) instead of the model table.

Like SuperBench's baseline.json, one value per "model/figure" key; each with where it came from. Only sound
figures go in: none broken, disturbed, noisy or unjudged, and none bound by launch overhead.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter, defaultdict
from typing import Any

from rigcheck.engine.events import Trust
from rigcheck.engine.measure.baseline_file import BASELINE_FORMAT, BASELINE_VERSION
from rigcheck.engine.trust.judgement import trust_in, trust_word

UNSOUND = {t.value for t in Trust if not t.sound}


def cpu_model(report: dict[str, Any]) -> str | None:
    """The CPU as a baseline names it: its model and how many CPUs the run could use (`AMD EPYC (2 CPUs)`), since a
    CPU figure depends on both; None where Probe did not record them."""
    cpu = ((report.get("facts") or {}).get("probe") or {}).get("cpu") or {}
    model, cpus = cpu.get("model"), cpu.get("usable_cpus") or cpu.get("logical_cpus")
    if not model or model == "unknown":
        return None
    return f"{model} ({cpus} CPUs)" if cpus else str(model)


def _model(report: dict[str, Any], m: dict[str, Any]) -> str | None:
    params, conditions = m.get("params") or {}, m.get("conditions") or {}
    if str(m.get("device", "")).startswith("cuda"):
        return conditions.get("gpu_name") or params.get("gpu_name") or params.get("device_name")
    cpu_only = not any(str(r.get("device", "")).startswith("cuda") for r in report.get("measurements", []))
    if cpu_only and m.get("device") == "cpu" and not m.get("host"):  # a fleet's hosts each have their own CPU
        return cpu_model(report)
    return None


def _figure_rows(report: dict[str, Any]) -> list[tuple[str, str, float, str, str]]:
    """(model, figure, value, unit, where) for each sound GPU or CPU figure and each best-of verdict of the run."""
    out = []
    for m in report.get("measurements", []):
        params, conditions = m.get("params") or {}, m.get("conditions") or {}
        model = _model(report, m)
        sound = not (params.get("broken") or params.get("launch_bound") or trust_in(conditions) in UNSOUND)
        if model and sound and m.get("value"):
            where = f"{m.get('host') or ''} {m['device']}".strip()
            out.append((str(model), m["name"], float(m["value"]), m.get("unit") or "", where))
    for v in report.get("verdicts", []):
        numbers, check = v.get("numbers") or {}, v.get("check_name") or ""
        if not (str(v.get("device", "")).startswith("cuda") and numbers.get("model")):
            continue
        where = f"{v.get('host') or ''} {v['device']}".strip()
        if check.startswith("best-") and numbers.get("value"):
            out.append((numbers["model"], check, float(numbers["value"]), numbers.get("unit") or "", where))
        elif check == "max-find" and numbers.get("mean"):
            out.append(
                (numbers["model"], f"max-find {numbers.get('dtype', 'bf16')}", float(numbers["mean"]), "TFLOP/s", where)
            )
    return out


def _none_sound(report: dict[str, Any]) -> str:
    """Why a run gave no figure to make a baseline of, in one sentence."""
    trusts = Counter(trust_word(m.get("conditions")) or "no telemetry" for m in report["measurements"])
    unsound = ", ".join(f"{n} {word}" for word, n in sorted(trusts.items()) if word in UNSOUND)
    if unsound:
        run = report["run"]["id"]
        return f"run {run} has no sound figure to make a baseline of ({unsound}); next: run again on a quiet host"
    return f"run {report['run']['id']} has no figure to make a baseline of"


def to_baseline(report: dict[str, Any]) -> str:
    """The baseline file's text; ValueError when the run holds no GPU figure to make one of."""
    run = report["run"]
    grouped: dict[tuple[str, str], list[tuple[float, str, str]]] = defaultdict(list)
    for model, figure, value, unit, where in _figure_rows(report):
        grouped[(model, figure)].append((value, unit, where))
    if not grouped:
        raise ValueError(_none_sound(report))
    day = time.strftime("%Y-%m-%d", time.localtime(run.get("started") or 0))
    made = f"rigcheck run {run['id']} on {run.get('host') or 'its host'}, {day}, profile {run.get('profile')}"
    figures = {}
    for (model, figure), found in sorted(grouped.items()):
        places = sorted({w for _, _, w in found})
        source = f"{made}: {places[0]}" if len(found) == 1 else f"{made}: median of {len(found)} ({', '.join(places)})"
        figures[f"{model}/{figure}"] = {
            "value": round(statistics.median(v for v, _, _ in found), 4),
            "unit": found[0][1],
            "source": source[:200],
        }
    baseline = {"format": BASELINE_FORMAT, "version": BASELINE_VERSION, "source": made, "figures": figures}
    return json.dumps(baseline, indent=2) + "\n"
