"""`rigcheck references`: the reference table for the GPUs present (or `--all`), with every figure's source and
its share of the datasheet peak, and each figure's expectation on each present GPU (measured or derived from its
architecture), so a user sees what the machine will be held to; on a CPU host, its CPU's; `--baseline FILE`
overrides the table for the figures it holds, as it does in a run."""

from __future__ import annotations

import argparse
from typing import Any

from rigcheck.engine.facts.gpu_props import amd_props, nvidia_props
from rigcheck.engine.facts.present_gpus import present_gpus
from rigcheck.engine.measure.arch_peaks import family_of
from rigcheck.engine.measure.references import (
    MODELS,
    SOURCES,
    Model,
    Reference,
    baseline_reference,
    model_of,
    references_of,
    source_text,
)
from rigcheck.engine.run.numbers import given
from rigcheck.engine.run.options import read_baseline
from rigcheck.tui.cli_expected import cpu_lines, derivation_lines, expected_lines


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("references", help="list the reference figures this machine's GPUs are held to")
    parser.add_argument("--all", action="store_true", help="every model in the table, not only the GPUs present")
    parser.add_argument(
        "--baseline",
        type=given("a baseline file"),
        metavar="FILE",
        help="a baseline file (`export RUN --format baseline`)",
    )


def _row(reference: Reference, note: str = "") -> str:
    share = f"{reference.value / reference.peak:.0%} of {reference.peak_of}" if reference.peak else "no datasheet peak"
    figure = reference.figure + (" (any size)" if reference.size == "any" else "")
    return f"  {figure:<34} {reference.value:>10,.6g} {reference.unit:<10} {share:<17} {reference.short}{note}" + (
        f" ({reference.note})" if reference.note else ""
    )


def _sources(models: list[Model]) -> list[str]:
    """Each source the listed models' figures cite, in full, once."""
    shorts = {r.short for m in models for r in references_of(m.key)}
    cited = {s["short"]: source_text(s, "") for s in SOURCES.values() if s["short"] in shorts}
    return ["sources:", *(f"  {short}: {full}" for short, full in cited.items())] if cited else []


def _model_lines(model: Model, seen_as: str | None, baseline: dict[str, Any] | None) -> list[str]:
    peaks = ", ".join(f"{k} {v:,.6g}" for k, v in model.peaks.items())
    head = f"{model.key}" + (f" (this machine: {seen_as})" if seen_as else "") + f" [{model.vendor}]"
    lines = [head, f"  datasheet peaks: {peaks} ({model.peak_source})"]
    entries = references_of(model.key)
    overridden = set()
    if baseline and seen_as:
        for entry in entries:
            found = baseline_reference(baseline, seen_as, entry.figure)
            if found is not None:
                overridden.add(entry.figure)
                lines.append(_row(found, "  <- --baseline (overrides the table)"))
        for key, value in baseline.get("figures", {}).items():
            name, _, figure = key.partition("/")
            if name.strip().casefold() == seen_as.strip().casefold() and figure not in {e.figure for e in entries}:
                lines.append(
                    f"  {figure:<30} {float(value['value']):>10,.6g} {value.get('unit', ''):<10} "
                    f"{'':<16} baseline (not in the table)"
                )
    lines += [_row(e) for e in entries if e.figure not in overridden]
    if not entries:
        lines.append("  no reference figures: judged against datasheet peaks, peers and history only")
    return lines


def command_references(args: argparse.Namespace) -> int:
    baseline = read_baseline(args.baseline) if args.baseline else None
    blocks: list[list[str]] = []
    shown: list[Model] = []
    if args.all:
        shown = list(MODELS)
        blocks = [_model_lines(m, None, None) for m in MODELS] + [derivation_lines()]
    else:
        gpus = present_gpus()
        props = nvidia_props() | amd_props(names={g.bus_id: g.name for g in gpus if g.bus_id})
        for gpu in gpus:
            mine = props.get(gpu.bus_id or "")
            model = model_of(gpu.name, mine.units if mine else None, mine.arch if mine else None, gpu.pci_id)
            where = f"{gpu.name}, {gpu.bus_id or '?'}, PCI id {gpu.pci_id or '?'}"
            if model is None:
                family = family_of(mine.arch) if mine else None
                blocks.append([f"{where}: not in the table; expected from its architecture ({family or 'unknown'})"])
            else:
                shown.append(model)
                blocks.append(_model_lines(model, gpu.name, baseline))
            blocks[-1] += expected_lines(gpu.name, mine, baseline)
        if not gpus:  # a CPU host: its CPU figures are still judged, so say against what
            blocks.append(
                ["no GPU on this host (NVML, amdgpu); `rigcheck references --all` lists every model", *cpu_lines()]
            )
    print("\n\n".join("\n".join(block) for block in [*blocks, _sources(list(dict.fromkeys(shown)))] if block))
    return 0
