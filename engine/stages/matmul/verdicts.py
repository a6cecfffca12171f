"""The sweep's summary verdicts: the best figure of each dtype judged against its model's reference (NOT JUDGED
where there is none), INCONCLUSIVE where every figure was too noisy, and a note of the figures that stayed noisy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.cpu_reference import cpu_reference, this_cpu
from rigcheck.engine.measure.arch_peaks import props_of
from rigcheck.engine.measure.arch_shares import lookup
from rigcheck.engine.measure.references import Reference, reference_for
from rigcheck.engine.stages.common.figures import usable
from rigcheck.engine.stages.matmul.reference import judged

STAGE = "matmul"


BEYOND_USE_SPREAD = 0.25  # a figure whose rates spread more than this share of their median is no best


def too_noisy(figure: Measurement) -> bool:
    """Spread so wide that the median says little: it is shown, labelled NOISY, but never picked as a best."""
    spread = figure.params.get("spread_rel")
    return spread is not None and spread > BEYOND_USE_SPREAD


def spread_words(m: Measurement) -> str:
    """'matmul tf32 8192 (spread 12%, then 9%)': a figure's spread, and its first one where it was measured again."""
    first = (m.params.get("noisy_first") or {}).get("spread_rel")
    now = m.params.get("spread_rel")
    if now is None:
        return m.name
    return f"{m.name} (spread {first:.0%}, then {now:.0%})" if first is not None else f"{m.name} (spread {now:.0%})"


def bests(results: list[Measurement]) -> tuple[dict[str, Measurement], dict[str, list[Measurement]]]:
    """The best usable figure of each dtype (a figure measured again stands for its dtype: it was taken once the
    GPU was idle), and the figures too noisy to stand as a best."""
    by_dtype: dict[str, Measurement] = {}
    unusable: dict[str, list[Measurement]] = {}
    for m in filter(usable, results):
        key = m.params["dtype"] + ("" if m.params["library"] == "torch" else f" ({m.params['library']})")
        held = by_dtype.get(key)
        if too_noisy(m) and not m.params.get("remeasured"):
            unusable.setdefault(key, []).append(m)
        elif held is None or m.params.get("remeasured") or (not held.params.get("remeasured") and m.value > held.value):
            by_dtype[key] = m
    return by_dtype, unusable


def _reference(
    device_name: str, best: Measurement, key: str, baseline: dict[str, Any] | None, sms: int | None, arch: str | None
) -> Reference | None:
    """The best-of's reference: the baseline's, its model's own, else its architecture's share (issue 40)."""
    props = props_of(best.params)
    if props is None:  # a figure with no device facts: its model's entry alone, told apart by SMs and arch
        return reference_for(device_name, f"best-{key}", baseline, sms, arch)
    found = lookup(device_name, f"best-{key}", props, baseline)
    return None if isinstance(found, str) else found


def failing_bests(
    results: list[Measurement],
    device_name: str,
    baseline: dict[str, Any] | None,
    sms: int | None = None,
    arch: str | None = None,
) -> list[Measurement]:
    """The best figures that would FAIL against their reference, not yet measured again."""
    found = []
    for key, best in bests(results)[0].items():
        reference = _reference(device_name, best, key, baseline, sms, arch)
        if (
            not best.params.get("remeasured")
            and judged(best.value, reference, device_name, best.name)[0] == Status.FAIL
        ):
            found.append(best)
    return found


def summary_verdicts(
    results: list[Measurement],
    label: str,
    device_name: str | None = None,
    baseline: dict[str, Any] | None = None,
    sms: int | None = None,
    arch: str | None = None,
) -> Iterator[Verdict]:
    """The best figure of each dtype, judged on a GPU against its model's reference (or the baseline's); and the
    noisy figures. `device_name` is None on the CPU: no reference there."""
    by_dtype, unusable = bests(results)
    for key, figures in unusable.items():
        if key in by_dtype:
            continue
        spreads = ", ".join(f"{m.name} ±{m.params['spread_rel']:.0%}" for m in figures)
        yield Verdict(
            STAGE,
            f"best-{key}",
            Status.INCONCLUSIVE,
            f"no best {key} on {label}: could not be judged: every figure spread more than {BEYOND_USE_SPREAD:.0%} "
            f"of its median ({spreads}); next: run it again on a quiet host (`--wait-quiet 120`)",
            {"noisy": [m.name for m in figures]},
            device=label,
        )
    # launch-bound figures are noisy by nature and are labelled so on their own; they do not warn
    stayed = [m for m in results if m.params["noisy"] and usable(m) and not m.params.get("launch_bound")]
    noisy = [m.name for m in stayed]
    for key, best in by_dtype.items():
        share = best.params["share_of_peak"]
        tail = f", {share:.0%} of the datasheet's {best.params['peak']:g}" if share else ""
        against: dict[str, object]
        status, cited, against = Status.NOT_JUDGED, "", {"figure": best.name}
        ending = "; not judged here: a CPU has no datasheet reference (compared only against history)"
        if device_name is None and cpu_reference(best, this_cpu()) is not None:
            ending = f"; not judged here: judged against this CPU model's own reference in `cpu {best.name}`"
        if device_name is not None:
            reference = _reference(device_name, best, key, baseline, sms, arch)
            status, cited, ending, against = judged(best.value, reference, device_name, best.name)
        again = best.params.get("remeasured")
        if again:
            ending += f"; {again['words']} (first {again['first']:.4g})"
        yield Verdict(
            STAGE,
            f"best-{key}",
            status,
            f"best {key} on {label}: {best.value:.4g} {best.unit} median at {best.params['m']}{cited}{tail}{ending}",
            {"value": best.value, "unit": best.unit, "share_of_peak": share, "shape": best.name} | against,
            device=label,
        )
    if noisy:  # noise alone is no fault (issue 41): each was measured again, and is labelled NOISY where it stayed
        yield Verdict(
            STAGE,
            "noise",
            Status.PASS,
            f"note: {len(noisy)} figure(s) were noisy (interquartile spread over 5% of the median) and stayed so "
            f"when measured again: {', '.join(spread_words(m) for m in stayed)}; each is labelled NOISY; next: if the "
            "device was quiet, "
            "run it again (`--wait-quiet 120`)",
            {"noisy": noisy, "note": True},
            device=label,
        )
