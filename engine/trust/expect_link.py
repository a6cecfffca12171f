"""Host-to-device and device-to-host pinned copies against the PCIe link they crossed: its generation and width as
NVML read them while the copy ran (idle links lower their generation to save power), and what such a link carries.

A link trained below its maximum is named with its next step; a copy well below what its link carries is a WARN
(or a FAIL below half), with its cause from the one cause function, or INCONCLUSIVE where that cause is someone
else's load or a setting in force (engine/trust/expect_words.py).
Standard library only: the parent runs it on the annotated figures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rigcheck.engine.events import Measurement, Status, Trust, Verdict
from rigcheck.engine.measure.plausibility import pcie_limit
from rigcheck.engine.measure.references import FAIL_BELOW, WARN_BELOW
from rigcheck.engine.stages.health.checks import share_in_words  # a link's share reads as in the health stage
from rigcheck.engine.trust.cause import Expectation, pcie_link
from rigcheck.engine.trust.expect_words import joined, judge
from rigcheck.engine.trust.judgement import trust_in

# Pinned copies reach 80-88% of a link's one-way rate after encoding: nvbandwidth's 55.4 / 55.1 GB/s on a Gen5 x16
# H200 (63.0), about 26 on a Gen4 x16 A100 (31.5); engine/measure/references.json holds both with their sources.
LINK_SHARE_LOW, LINK_SHARE_HIGH = 0.80, 0.88
LINK_SOURCE = "nvbandwidth and SuperBench"
RESEAT = "reseat the card, check the slot's BIOS bifurcation and riser, then `lspci -vv -s {bus} | grep -i lnksta`"
DIRECTION = {"h2d": "H2D", "d2h": "D2H"}


def link_of(m: Measurement) -> dict[str, Any]:
    """The link's generation and width now and at most, with whether they were read under load."""
    link = pcie_link(m)
    nested = given if isinstance(given := m.params.get("pcie"), dict) else {}
    return link | {"under_load": bool(nested.get("under_load"))}


def judged_link(m: Measurement) -> bool:
    """A pinned host copy on a GPU: the figures this module judges."""
    return m.device.startswith("cuda") and m.params.get("bound") == "link" and bool(m.params.get("pinned"))


def link_verdict(m: Measurement, stage: str) -> Verdict | None:
    """The figure against its link; None where the link's maximum is unknown or the figure is no result."""
    if not judged_link(m) or m.params.get("broken") or m.value <= 0:
        return None
    link = link_of(m)
    if not (link["max_gen"] and link["max_width"]):
        return None
    top = pcie_limit(int(link["max_gen"]), None, int(link["max_width"]), "NVML")
    if top is None:
        return None
    now_gen, now_width = link["gen"] or link["max_gen"], link["width"] or link["max_width"]
    now = pcie_limit(int(now_gen), None, int(now_width), "NVML") or top
    top_words, now_words = f"Gen{link['max_gen']} x{link['max_width']}", f"Gen{now_gen} x{now_width}"
    where, way = m.device, DIRECTION.get(str(m.params.get("direction")), m.name)
    share = m.value / top.value
    numbers = {
        "device": where,
        "value": m.value,
        "link": now_words,
        "link_max": top_words,
        "link_gbs": round(top.value, 2),
        "share_of_link": round(share, 4),
        "expected": round(LINK_SHARE_LOW * top.value, 2),
        "source": LINK_SOURCE,
        "under_load": link["under_load"],
    }
    expectation = Expectation(
        LINK_SHARE_LOW * top.value, f"{LINK_SHARE_LOW:.0%} of its {top_words} link ({LINK_SOURCE})", "link"
    )
    check = f"link {m.name}"
    bus = m.params.get("pci_bus_id") or (m.conditions or {}).get("gpu_pci_bus_id") or "BUS"
    if (now_gen, now_width) != (link["max_gen"], link["max_width"]) and now.value < top.value:
        when = "while copying" if link["under_load"] else "at idle, and it could not be read under load"
        text = (
            f"{where}'s link runs at {now_words} of {top_words} ({when}): {way} {m.value:.3g} GB/s, "
            f"{share_in_words(now.value / top.value)} of what this card carries ({share:.0%} of {top.value:.3g})"
        )
        found = judge(m, Status.WARN, expectation)
        if found.status == Status.INCONCLUSIVE:  # the link reads low, but someone else's load shaped the copy
            text = f"{text}; {found.words}"
        else:
            text = f"{text}; next: {RESEAT.format(bus=bus)}"
        numbers |= found.numbers | {"trained_down": True}
        return Verdict(stage, check, found.status, text, numbers, device=where)
    expected = LINK_SHARE_LOW * top.value
    ratio = m.value / expected
    head = (
        f"{where} {m.name} {m.value:.3g} GB/s: {share:.0%} of its {top_words} link ({top.value:.3g}), "
        f"expected {LINK_SHARE_LOW * 100:.0f}-{LINK_SHARE_HIGH:.0%} ({LINK_SOURCE})"
    )
    graded = Status.PASS if ratio >= WARN_BELOW else Status.FAIL if ratio < FAIL_BELOW else Status.WARN
    found = judge(m, graded, expectation)
    if found.status == Status.FAIL and trust_in(m.conditions) is Trust.SUSPECT:
        found = replace(found, status=Status.WARN)  # not measured clean: a FAIL is for a figure measured clean
    return Verdict(stage, check, found.status, joined(head, found), numbers | found.numbers, 1 - WARN_BELOW, where)
