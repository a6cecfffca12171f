"""What the runner sends a stage child, as one type with the run's one codec: the parent and the child both
import it, and it imports neither torch nor the child's entry."""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.engine.run.codec import decode, encode
from rigcheck.engine.stage import StageSpec

READY = b"rigcheck-ready"  # a child started ahead of its stage says so once it has imported what the stage will


@dataclass(frozen=True)
class StageOrder:
    """What the runner asks of one stage child: the stage's spec, where its function lives
    ("module:function"), whether to send the environment fingerprint first, and where its output goes."""

    spec: StageSpec
    target: str
    fingerprint: bool = True
    log: str = ""  # a warm child's log file for this stage; a cold child's output is already there
    shared: str = ""  # the run's folder for host work done once (a warm child may predate the run)

    def to_json(self) -> str:
        return encode(self)

    @classmethod
    def from_json(cls, text: str) -> StageOrder:
        """The order `to_json` wrote; CodecError (one sentence) for a bad or foreign payload."""
        return decode(cls, text)
