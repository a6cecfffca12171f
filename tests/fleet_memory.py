"""An in-memory stand-in for torch.distributed's store and a keyed fleet channel on it, for the fleet's tests
that need no torchrun."""

from __future__ import annotations

from rigcheck.engine.fleet.channel import FleetChannel

KEY = b"k" * 32
RUN = "t"


class MemoryStore:
    """The calls of torch.distributed's Store that the channel uses."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.calls = 0

    def set(self, key: str, value: str | bytes) -> None:
        self.calls += 1
        self.data[key] = value if isinstance(value, bytes) else value.encode()

    def get(self, key: str) -> bytes:
        self.calls += 1
        return self.data[key]

    def multi_get(self, keys: list[str]) -> list[bytes]:
        self.calls += 1
        return [self.data[k] for k in keys]

    def check(self, keys: list[str]) -> bool:
        self.calls += 1
        return all(k in self.data for k in keys)

    def add(self, key: str, amount: int) -> int:
        self.calls += 1
        value = int(self.data.get(key, b"0")) + amount
        self.data[key] = str(value).encode()
        return value

    def compare_set(self, key: str, expected: str, desired: str) -> bytes:
        self.calls += 1
        if self.data.get(key, b"") == expected.encode():
            self.data[key] = desired.encode()
        return self.data[key]


def channel(shared: MemoryStore, rank: int, world: int, key: bytes = KEY, **bursts: object) -> FleetChannel:
    """A channel that sends each event at once (a burst of one) unless `window` says otherwise."""
    return FleetChannel(shared, rank, world, key, RUN, **{"window": 0.0, **bursts})  # type: ignore[arg-type]
