"""The fleet's store as sealed slots: every value an agent puts there sealed, every value read opened and checked."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.fleet.seal import BOOTSTRAP, Unsealed, seal, unseal


@dataclass(frozen=True)
class Read:
    """What one slot held: its body once it passed (`state` ok), or why not (missing, forged, unreadable)."""

    state: str
    body: Any = None
    detail: str = ""
    raw: bytes = b""


class SealedSlots:
    """Sealed reads and writes of torchrun's c10d store, one store call at a time (thread-safe)."""

    def __init__(self, store: Any, rank: int, world: int, key: bytes, run_id: str) -> None:
        self.store, self.rank, self.world = store, rank, world
        self.key, self.run_id = key, run_id
        self.nonce = BOOTSTRAP  # rank 0's for this run: rank 0 makes it, every other agent asks for it (join)
        self._lock = threading.Lock()  # one store call at a time

    def _seal(self, key: str, body: Any, nonce: str | None = None) -> str:
        return seal(self.key, self.run_id, key, body, self.nonce if nonce is None else nonce)

    def put(self, key: str, body: Any, nonce: str | None = None) -> None:
        value = self._seal(key, body, nonce)
        with self._lock:
            self.store.set(key, value)

    def read(self, key: str, nonce: str | None = None) -> Read:
        """One slot, opened: missing, or its seal (for this run's nonce, or `nonce`) and form checked."""
        with self._lock:
            if not self.store.check([key]):
                return Read("missing")
            raw = self.store.get(key)
        return self._open(key, raw, nonce)

    def _get(self, key: str) -> Any | None:
        """A slot's body if it passed; None for a missing one or one that did not (the reader waits on)."""
        found = self.read(key)
        return found.body if found.state == "ok" else None

    def exists(self, key: str) -> bool:
        with self._lock:
            return bool(self.store.check([key]))

    def read_many(self, keys: list[str]) -> list[Read]:
        """Many slots in two round trips when they all exist (check, then multi_get), one by one when not:
        multi_get waits for a missing key rather than say so."""
        if not keys:
            return []
        with self._lock:
            whole = bool(self.store.check(keys))
            raws = list(self.store.multi_get(keys)) if whole else []
        if not whole:
            return [self.read(key) for key in keys]
        return [self._open(key, raw) for key, raw in zip(keys, raws, strict=True)]

    def _open(self, key: str, raw: Any, nonce: str | None = None) -> Read:
        raw = raw if isinstance(raw, bytes) else str(raw).encode()
        try:
            return Read(
                "ok", unseal(self.key, self.run_id, key, raw, self.nonce if nonce is None else nonce).body, raw=raw
            )
        except Unsealed as why:
            return Read(why.reason, detail=why.detail, raw=raw)
