"""`rigcheck references`' expectation lines: for a present GPU, each figure's expected value and basis, marked
measured (its model's own entry) or derived (its architecture's share of its derived peak); for the host's CPU,
its capability and what its CPU figures are judged against; for `--all`, the models the derivation covers."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.facts.cpu_reference import cpu_capability, cpu_model
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.arch_peaks import DeviceProps, NoPeak, arch_key, family_of, load, peak, specimen_props
from rigcheck.engine.measure.arch_shares import lookup
from rigcheck.engine.measure.plausibility import cpu_matmul_limit
from rigcheck.engine.measure.references import MODELS, REFERENCES, references_of, share_of_peak

PEAKS = ("fp32", "tf32", "bf16", "fp16", "fp8", "memory")


def gpu_figures() -> list[str]:
    """The GPU figures a run measures that a reference or a share can hold, in the table's order."""
    names = [r.figure for r in REFERENCES if r.model == "H200" and r.size != "any" and r.figure_kind != "host link"]
    return list(dict.fromkeys([*names, "max-find bf16"]))


def _sort_key(name: str) -> tuple[int, str]:
    order = ("best-", "max-find", "matmul", "device copy", "train")
    return next((i for i, prefix in enumerate(order) if name.startswith(prefix)), len(order)), name


def peak_lines(props: DeviceProps) -> list[str]:
    out = []
    for what in PEAKS:
        found = peak(props, what)
        if not isinstance(found, NoPeak):
            unit = "GB/s" if what == "memory" else "TFLOP/s"
            out.append(f"    {what:<7} {found.value:>10,.1f} {unit:<8} {found.words}")
    return out


def expected_lines(name: str, props: DeviceProps | None, baseline: dict[str, Any] | None = None) -> list[str]:
    """Each figure's expectation on this GPU, and its basis."""
    facts = (
        f"{props.units or '?'} units x {props.sm_clock_max_mhz or '?'} MHz, {props.arch or 'no architecture'}"
        if props
        else "no device properties read"
    )
    lines = [f"  expected on this GPU ({facts}):"]
    if props is not None:
        lines += ["  derived peaks:", *peak_lines(props)] if peak_lines(props) else []
    lines.append("  each figure (measured: its model's entry; derived: its architecture's share of its peak):")
    for figure in sorted(gpu_figures(), key=_sort_key):
        found = lookup(name, figure, props, baseline)
        if isinstance(found, str):
            lines.append(f"    {figure:<26} {'':>10} {'':<9} NOT JUDGED  {found}")
            continue
        mark = {"expected": "derived ", "baseline": "baseline"}.get(found.kind, "measured")
        basis = found.short if found.kind == "expected" else f"{found.model} {found.short}"
        lines.append(f"    {figure:<26} {found.value:>10,.4g} {found.unit:<9} {mark}    {basis}")
    return lines


def cpu_lines() -> list[str]:
    """This host's CPU: what it can do, its limit, and what its CPU matmul and training figures are judged against."""
    facts = cpu_facts()
    name, flags = str(facts.get("model") or "this CPU"), facts.get("flags") or []
    capability = cpu_capability(name, flags, str(facts.get("machine") or ""))
    limit = cpu_matmul_limit(facts.get("logical_cpus"), facts.get("max_mhz"), flags, "fp32", facts.get("machine", ""))
    where = f"{limit.value:,.4g} GFLOP/s fp32 ({limit.basis})" if limit else "computed in each run"
    lines = [f"this CPU: {name} ({capability}, {facts.get('logical_cpus')} CPUs); its limit: {where}"]
    model = cpu_model(name, capability)
    if model is None:
        lines.append(
            f"  no CPU with {capability} units measured: its CPU figures are NOT JUDGED against a reference "
            "(judged against its own history only)"
        )
        return lines
    for r in references_of(model.key):
        if not r.peak:
            continue
        share = share_of_peak(r)
        # the entry scaled by this host's limit over its measuring host's: in the entry's own unit, samples/s too
        expected = f"{r.value * limit.value / r.peak:>10,.4g} {r.unit}" if limit else f"{share:.0%} of its limit"
        lines.append(
            f"  {r.figure:<26} {expected}  measured   {share:.0%} of the limit, as the {model.key} "
            f"({model.capability}) reaches ({r.short})"
        )
    return lines


def derivation_lines() -> list[str]:
    """`--all`: the models the derivation covers beyond the table, and the architectures with rates."""
    listed = {m.key for m in MODELS}
    lines = ["derived only (not in the table; their peaks from SMs/CUs, clocks and bus width):"]
    for specimen in load()["specimens"]:
        if specimen["model"] in listed or not specimen.get("units"):
            continue
        props = specimen_props(specimen)
        lines += [f"{specimen['model']} ({specimen['name']}, {arch_key(props.arch)}) [derived]", *peak_lines(props)]
    archs = ", ".join(f"{key} {family_of(key)}" for key in load()["archs"])
    lines.append(f"architectures with per-unit rates: {archs}; any other is NOT JUDGED, never guessed")
    return lines
