"""One stored run as a single self-contained HTML page, to attach to a vendor's ticket: `export --format html`.

Everything is inside the file: the style inline, the plots as inline SVG, no script and no address to fetch,
so it reads the same offline, in a mail client's preview, or printed.
"""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.headline import counts, headline
from rigcheck.engine.report.html_facts import host_facts, run_facts
from rigcheck.engine.report.html_figures import peers, references
from rigcheck.engine.report.html_plots import peers_svg, timelines_svg
from rigcheck.engine.report.html_tables import esc, figures_table, health_table, status, verdicts_table
from rigcheck.engine.report.html_timeline import stage_spans, timelines
from rigcheck.engine.store.read import StoreReader

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.8em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } table.facts td:first-child { color: #555; white-space: nowrap; }
table.figures td:nth-child(5), .num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.st { font-weight: 600; padding: 0 4px; border-radius: 3px; white-space: nowrap; }
.st-pass { color: #1e7d32; } .st-warn { color: #9a6700; background: #fff5d6; }
.st-fail { color: #fff; background: #c0392b; } .st-crash { color: #fff; background: #6c1d8f; }
.st-inconclusive { color: #fff; background: #1f5fa8; }
.st-skip, .st-other { color: #666; } .st-running { color: #1f5fa8; }
.pre { white-space: pre-wrap; } .small, .note { font-size: 12px; color: #555; }
svg.plot { display: block; max-width: 100%; height: auto; margin: 0.4em 0; }
.peers { display: flex; flex-wrap: wrap; gap: 0.5em 2em; }
code { font-size: 12px; } .headline { font-size: 15px; } .headline .st { margin-right: 0.2em; }
@media print { nav { display: none; } h2 { break-after: avoid; } svg.plot, tr { break-inside: avoid; } }
"""

SECTIONS = (
    ("facts", "Facts"),
    ("verdicts", "Verdicts"),
    ("figures", "Figures"),
    ("health", "Health"),
    ("timelines", "Timelines"),
    ("peers", "GPUs against their peers"),
)


def _timelines(report: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    if not samples:
        return "<p>No telemetry samples were stored for this run (it ran with --no-telemetry, or ended at once).</p>"
    started = float(report["run"].get("started") or samples[0].get("t") or 0.0)
    spans = stage_spans(report["stages"], started)
    out = [f'<p class="small">{len(samples)} samples; the stages are shaded and named along each plot\'s top.</p>']
    for panel, svg in timelines_svg(timelines(samples, started), spans):
        out.append(svg or f"<p><b>{esc(panel.title)}</b>: no sample held a reading of it on this host.</p>")
    return "\n".join(out)


def _peers(report: dict[str, Any]) -> str:
    groups = peers(report)
    if not groups:
        return (
            "<p>No figure was measured by two or more GPUs of one model where the GPU was the bottleneck, "
            "so there is nothing to compare.</p>"
        )
    head = (
        f'<p class="small">Red: more than {groups[0].tolerance:.0%} below the best of the others (the rule the run '
        "used); the dashed line marks that distance below the best GPU.</p>"
    )
    return head + '\n<div class="peers">\n' + "\n".join(peers_svg(g, str(i)) for i, g in enumerate(groups)) + "\n</div>"


def to_html(report: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """The whole page for one run: its report (StoreReader.report) and its telemetry samples (.samples)."""
    run = report["run"]
    title = f"rigcheck run {run.get('id')} on {run.get('host') or 'unknown host'}"
    bodies = {
        "facts": f"<h3>The run</h3>\n{run_facts(report)}\n<h3>What Probe found</h3>\n{host_facts(report)}",
        "verdicts": verdicts_table(report),
        "figures": figures_table(report, references(report)),
        "health": health_table(report),
        "timelines": _timelines(report, samples),
        "peers": _peers(report),
    }
    nav = " ".join(f'<a href="#{key}">{esc(words)}</a>' for key, words in SECTIONS)
    verdicts, figures = counts(report)
    marks = [status(w) + f" {n}" for w, n in verdicts] + [status(w) + f" {n}" for w, n in figures]
    head = f'<p class="headline">{" ".join(marks)} <span class="small">({esc(headline(report))})</span></p>'

    sections = "\n".join(
        f'<section id="{key}">\n<h2>{esc(words)}</h2>\n{bodies[key]}\n</section>' for key, words in SECTIONS
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<h1>{esc(title)}</h1>\n{head}\n<nav>{nav}</nav>\n{sections}\n</body>\n</html>\n"
    )


def export_html(store: StoreReader, run_id: int) -> str:
    """The page for a stored run; StoreDamaged (one line) where its rows or samples no longer read back."""
    report = store.report(run_id)  # it reads the samples too (the contention report): damage shows here first
    if report is None:
        raise ValueError(f"no run {run_id} in the store at {store.path}")
    return to_html(report, store.samples(run_id))
