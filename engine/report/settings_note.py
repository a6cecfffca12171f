"""The run's closing note on the settings in force (issue 41): each one probe found is either named as the cause
of the figures it changed, or said to be set with no figure off, so a harmless setting ends as a note, never a
WARN, and a user still learns whether it mattered on this run."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.judged import judged_counts, verdict_numbers


def _settings_in_force(report: dict[str, Any]) -> dict[str, str]:
    """Each setting probe noted as in force, by name, with its value, in probe's order."""
    found: dict[str, str] = {}
    for verdict in report.get("verdicts", []):
        setting = verdict_numbers(verdict).get("setting")
        if verdict.get("stage") == "probe" and isinstance(setting, dict) and setting.get("name"):
            found.setdefault(str(setting["name"]), str(setting.get("value", "")))
    return found


def _figures_named(report: dict[str, Any]) -> dict[str, set[tuple[str, str, str]]]:
    """Per setting name, the figures (stage, device, check) whose verdict named it as their cause."""
    named: dict[str, set[tuple[str, str, str]]] = {}
    for verdict in report.get("verdicts", []):
        settings = verdict_numbers(verdict).get("cause_settings")
        if not isinstance(settings, list):
            continue
        figure = (str(verdict.get("stage") or ""), str(verdict.get("device") or ""), str(verdict.get("check_name")))
        for name in settings:
            named.setdefault(str(name), set()).add(figure)
    return named


def settings_line(report: dict[str, Any]) -> str | None:
    """'settings in force: A=1 named as the cause of 2 figure(s); B=x set, and no figure was off'; None where probe
    found no setting in force. Where no figure was judged against an expectation, none could be seen off: it says
    so rather than call the setting harmless."""
    in_force = _settings_in_force(report)
    if not in_force:
        return None
    named = _figures_named(report)
    words = [f"{n}={v} named as the cause of {len(named[n])} figure(s)" for n, v in in_force.items() if n in named]
    quiet = ", ".join(f"{n}={v}" for n, v in in_force.items() if n not in named)
    if quiet and judged_counts(report).judged:
        words.append(f"{quiet} set, and no figure was off")
    elif quiet:
        words.append(f"{quiet} set; no figure was judged against an expectation, so none could be seen off")
    return "settings in force: " + "; ".join(words)
