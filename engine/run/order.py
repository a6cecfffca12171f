"""What the runner sends a stage child, as one type with the run's one codec: the parent and the child both
import it, and it imports neither torch nor the child's entry."""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.engine.run.codec import decode, encode
from rigcheck.engine.stage import StageSpec


@dataclass(frozen=True)
class StageOrder:
    """What the runner asks of one stage child: the stage's spec, where its function lives
    ("module:function"), and whether to send the environment fingerprint first."""

    spec: StageSpec
    target: str
    fingerprint: bool = True

    def to_json(self) -> str:
        return encode(self)

    @classmethod
    def from_json(cls, text: str) -> StageOrder:
        """The order `to_json` wrote; CodecError (one sentence) for a bad or foreign payload."""
        return decode(cls, text)
