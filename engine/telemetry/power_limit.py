"""Whether a GPU's enforced power limit is its board's default (or its maximum) or was lowered: the burn's
child and the parent's trust judgement tell a power-limited board from a held-back one the same way."""

from __future__ import annotations

SLACK = 0.01  # a limit this close to the default is the default


def power_limit_state(limit_w: float | None, default_w: float | None, max_w: float | None, slack: float = SLACK) -> str:
    """ "default" where the limit is the board's default or its maximum (or above), "lowered" where it is
    below the default, "unknown" where a reading is missing."""
    if not limit_w:
        return "unknown"
    floor = 1 - slack
    if (default_w and limit_w >= default_w * floor) or (max_w and limit_w >= max_w * floor):
        return "default"
    return "lowered" if default_w else "unknown"
