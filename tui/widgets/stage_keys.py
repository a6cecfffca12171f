"""Each stage's key in the app, by its place in Stages: the Stages panel shows it and the app binds it."""

from __future__ import annotations

# 1-9, then 0, then letters no other key of the app takes (every stage is also in the command palette, by name)
STAGE_KEYS = (*"1234567890", *"efjkmstuvwxyz")


def stage_key(index: int) -> str:
    """The key that runs the stage at `index` (0-based) of Stages; "" past the last key (the palette runs it)."""
    return STAGE_KEYS[index] if 0 <= index < len(STAGE_KEYS) else ""
