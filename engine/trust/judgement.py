"""A figure's judgement as one typed record, and the one module that reads and writes its stored keys.

The stored form stays JSON inside a figure's conditions, as the store, the wire and the app have always kept it:
`trust` (a Trust word), `trust_reasons` (the reasons in words), `trust_outside` (those outside the hardware
measured), `trust_detail` (each reason's kind, numbers and what it involved, in the order of `trust_reasons`) and
`notes`. `Judgement.stored()` writes them; `Judgement.of(conditions)` reads them back, from any store (one from
before `trust_detail` was kept reads each reason's kind from the words that kind has always used, and its
outside-ness from `trust_outside`, or from its words where even that was not kept: the only reading of a reason's
words in rigcheck, and only for old stores).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.events import Trust

__all__ = ["OUTSIDE_WORDS", "Expected", "Judgement", "Reason", "note_words", "reason_words", "trust_in", "trust_word"]

# Words in a trust reason that say who disturbed the figure, for conditions stored before `trust_outside` was kept.
OUTSIDE_WORDS = ("other process", "CPUs busy", "cgroup", "CPU quota", "cannot see", "same device at the same time")

# The kinds of reason the judge gives (engine/trust/judge.py), each with whether it lies outside the hardware.
CPU_LOAD = "cpu-load"  # other processes on the CPUs the figure needed
CPU_QUOTA = "cpu-quota"  # a cgroup quota set the pace
GPU_PROCESSES = "gpu-processes"  # other processes at work on the figure's GPU
UNSEEN_USER = "unseen-user"  # a user of the GPU rigcheck cannot see (another container)
SHARED_RUN = "shared-run"  # another rigcheck run on the same device (--force)
SLOWDOWN = "slowdown"  # the board held its clocks back (heat, a power fault)
CLOCKS = "clocks"  # a clock far below what this GPU holds for the same work
BROKEN = "broken"  # no result: above the physical limit, or its two clocks disagree
TOO_SHORT = "too-short"  # too few telemetry samples
SPREAD = "spread"  # the repeats spread too much
UNKNOWN = "unknown"  # a reason stored before its kind was kept


# For conditions stored before `trust_detail` was kept: the words each kind of reason has always begun or held.
_LEGACY_KINDS = (
    ("other process(es) on the GPU", GPU_PROCESSES),
    ("cannot see", UNSEEN_USER),
    ("same device at the same time", SHARED_RUN),
    ("CPU quota", CPU_QUOTA),
    ("CPUs busy", CPU_LOAD),
    ("clocks held back by", SLOWDOWN),
    ("clock", CLOCKS),
    ("too short to judge", TOO_SHORT),
    ("timing spread", SPREAD),
)


def _legacy_kind(text: str) -> str:
    return next((kind for words, kind in _LEGACY_KINDS if words in text), UNKNOWN)


class Reason(str):
    """One trust reason: its words (it *is* its words, so a reason reads and compares as the text it always was),
    with its kind, whether it lies outside the hardware measured, its numbers and the processes or settings
    involved."""

    kind: str
    outside: bool
    numbers: Mapping[str, float]
    involved: tuple[str, ...]

    def __new__(
        cls,
        text: str,
        kind: str = UNKNOWN,
        outside: bool = False,
        numbers: Mapping[str, float] | None = None,
        involved: Sequence[str] = (),
    ) -> Reason:
        made = super().__new__(cls, text)
        made.kind, made.outside = kind, outside
        made.numbers, made.involved = dict(numbers or {}), tuple(str(i) for i in involved)
        return made

    @property
    def text(self) -> str:
        return str.__str__(self)

    def detail(self) -> dict[str, Any]:
        """What `trust_detail` keeps of it beside its words."""
        return {
            "kind": self.kind,
            "outside": self.outside,
            "numbers": dict(self.numbers),
            "involved": list(self.involved),
        }


@dataclass(frozen=True)
class Expected:
    """The expectation a figure was held to: its value, basis and source, and the figure's ratio to it; or none, and
    why (`none_why`)."""

    value: float | None = None
    basis: str = ""
    source: str = ""
    ratio: float | None = None
    none_why: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v not in (None, "")}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Expected:
        value, ratio = data.get("value"), data.get("ratio")
        return Expected(
            float(value) if isinstance(value, (int, float)) else None,
            str(data.get("basis") or ""),
            str(data.get("source") or ""),
            float(ratio) if isinstance(ratio, (int, float)) else None,
            str(data.get("none_why") or ""),
        )


@dataclass
class Judgement:
    """A figure's judgement: its trust, the reasons (structured), the notes that are not reasons, the expectation it
    was held to, and its one cause with the next step (where a verdict has named them)."""

    trust: Trust
    reasons: list[Reason] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expectation: Expected | None = None
    cause: str | None = None
    next_step: str | None = None

    @property
    def outside(self) -> list[Reason]:
        """The reasons that lie outside the hardware measured (someone else's load, a quota, a shared run)."""
        return [r for r in self.reasons if r.outside]

    @property
    def outside_hardware(self) -> bool:
        """SUSPECT because of something outside the hardware measured: such a figure can never fail (or pass) it."""
        return self.trust == Trust.SUSPECT and any(r.outside for r in self.reasons)

    def kinds(self) -> set[str]:
        return {r.kind for r in self.reasons}

    def stored(self) -> dict[str, Any]:
        """The keys this judgement keeps in a figure's conditions."""
        out: dict[str, Any] = {
            "trust": Trust(self.trust).value,
            "trust_reasons": [r.text for r in self.reasons],
            "trust_outside": [r.text for r in self.outside],
            "trust_detail": [r.detail() for r in self.reasons],
            "notes": list(self.notes),
        }
        if self.expectation is not None:
            out["expectation"] = self.expectation.as_dict()
        if self.cause is not None:
            out["cause"] = self.cause
        if self.next_step is not None:
            out["next_step"] = self.next_step
        return out

    @staticmethod
    def of(conditions: Mapping[str, Any] | None) -> Judgement | None:
        """The judgement a figure's stored conditions hold; None where it has none (no telemetry, no judge)."""
        data = conditions or {}
        trust = Trust.of(data.get("trust"))
        if trust is None:
            return None
        texts = [str(r) for r in data.get("trust_reasons") or ()]
        details = [d for d in data.get("trust_detail") or () if isinstance(d, Mapping)]
        kept_outside = "trust_outside" in data
        outside = [str(r) for r in data.get("trust_outside") or ()]
        reasons = []
        for index, text in enumerate(texts):
            detail = details[index] if len(details) == len(texts) else {}
            if detail:
                out = bool(detail.get("outside"))
            elif kept_outside:
                out = text in outside
            else:
                out = any(w in text for w in OUTSIDE_WORDS)
            reasons.append(
                Reason(
                    text,
                    str(detail.get("kind") or _legacy_kind(text)),
                    out,
                    {k: float(v) for k, v in (detail.get("numbers") or {}).items() if isinstance(v, (int, float))},
                    [str(i) for i in detail.get("involved") or ()],
                )
            )
        # a hand-written or partial record may name an outside reason only in `trust_outside`: it is still one
        reasons += [Reason(text, _legacy_kind(text), True) for text in dict.fromkeys(outside) if text not in texts]
        expected = data.get("expectation")
        return Judgement(
            trust,
            reasons,
            [str(n) for n in data.get("notes") or ()],
            Expected.from_dict(expected) if isinstance(expected, Mapping) else None,
            str(data["cause"]) if data.get("cause") else None,
            str(data["next_step"]) if data.get("next_step") else None,
        )


def trust_in(conditions: Mapping[str, Any] | None) -> Trust | None:
    """A figure's trust, read from its stored conditions (None: no telemetry judged it, or an unknown word)."""
    return Trust.of((conditions or {}).get("trust"))


def trust_word(conditions: Mapping[str, Any] | None) -> str | None:
    """The trust word as stored, known to this version or not (a later version's word is shown as it was written)."""
    word = (conditions or {}).get("trust")
    return str(word) if word else None


def reason_words(conditions: Mapping[str, Any] | None) -> list[str]:
    """A figure's trust reasons in words, as stored."""
    return [str(r) for r in (conditions or {}).get("trust_reasons") or ()]


def note_words(conditions: Mapping[str, Any] | None) -> list[str]:
    """A figure's notes (what bore on it but made it no less trusted), as stored."""
    return [str(n) for n in (conditions or {}).get("notes") or ()]
