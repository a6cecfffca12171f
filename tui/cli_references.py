"""`rigcheck references`: the reference table for the GPUs present (or `--all`), with every figure's source and
its share of the datasheet peak, so a user sees what the machine will be held to; `--baseline FILE` overrides
the table for the figures it holds, as it does in a run."""

from __future__ import annotations

import argparse
from typing import Any

from rigcheck.engine.facts.present_gpus import present_gpus
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
        blocks = [_model_lines(m, None, None) for m in MODELS]
    else:
        gpus = present_gpus()
        for gpu in gpus:
            model = model_of(gpu.name, pci_id=gpu.pci_id)
            where = f"{gpu.name}, {gpu.bus_id or '?'}, PCI id {gpu.pci_id or '?'}"
            if model is None:
                blocks.append([f"{where}: no reference for this model; judged against peers and history only"])
            else:
                shown.append(model)
                blocks.append(_model_lines(model, gpu.name, baseline))
        if not gpus:
            print("no GPU found (NVML, amdgpu); `rigcheck references --all` lists every model in the table")
            return 0
    print("\n\n".join("\n".join(block) for block in [*blocks, _sources(list(dict.fromkeys(shown)))] if block))
    return 0
