"""Training's CPU arm, bounded in time: on a slow host its larger figures are predicted from the ones already
measured and left out, with a SKIP that says so, where they would take the arm past its budget.

The CPU figures are only compared (against history, and as the denominator of the GPU-over-CPU speed-up):
the first one always runs, so the speed-up is always judged on the figures measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.engine.events import Status, Verdict

BUDGET_S = {"quick": 4.0, "standard": 15.0, "full": 60.0}  # the whole CPU arm, warm-up included
FLOOR_STEPS = 5  # the least a figure runs: a warm-up step, a sizing step and three timed chunks of one step


@dataclass
class CpuBudget:
    """Seconds spent on the CPU arm so far, and the latest figure's cost per sample and channel squared."""

    budget_s: float
    spent_s: float = 0.0
    per_unit_s: float | None = None

    @classmethod
    def of(cls, profile: str) -> CpuBudget:
        return cls(BUDGET_S.get(profile, max(BUDGET_S.values())))

    def predicted_s(self, channels: int, batch: int) -> float | None:
        """The least this figure would take, from the figures measured; None before the first."""
        if self.per_unit_s is None:
            return None
        return FLOOR_STEPS * batch * channels**2 * self.per_unit_s

    def skip(self, channels: int, batch: int, tag: str, stage: str) -> Verdict | None:
        """A SKIP where the figure would take the arm past its budget; None where it fits (or is the first)."""
        predicted = self.predicted_s(channels, batch)
        if predicted is None or self.spent_s + predicted <= self.budget_s:
            return None
        return Verdict(
            stage,
            tag,
            Status.SKIP,
            f"{tag} on cpu not measured: at least {predicted:.1f} s on this host's CPU (from the figures before "
            f"it), past the CPU arm's {self.budget_s:.0f} s ({self.spent_s:.1f} s spent); the speed-up over the CPU "
            "is judged on the figures measured",
            {"predicted_s": predicted, "spent_s": self.spent_s, "budget_s": self.budget_s},
            device="cpu",
        )

    def spent(self, channels: int, batch: int, seconds: float, steps: int) -> None:
        """Count a figure that took `seconds` over `steps` timed steps (plus its two untimed ones)."""
        self.spent_s += seconds
        # the latest figure's cost: the plan grows figure by figure, so it is the nearest to the next one (a small
        # batch's per-step overhead would over-predict a large one and leave out a figure a fast host measures)
        self.per_unit_s = seconds / max(1, steps + 2) / (batch * channels**2)
