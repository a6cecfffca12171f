"""Verify's memory checks on a fake CUDA memory pool: lost bytes and wrong values fail, a driver gap warns."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.stages.verify import memory

MIB = 2**20


class FakeCuda:
    """torch.cuda's memory calls over a pool of `total` bytes; `leak` bytes stay allocated after each cycle."""

    def __init__(self, total: int = 64 * MIB, leak: int = 0) -> None:
        self.total, self.leak, self.allocated, self.peak = total, leak, 0, 0

    def empty_cache(self) -> None:
        self.allocated += self.leak

    def memory_allocated(self, device: object) -> int:
        return self.allocated

    def max_memory_allocated(self, device: object) -> int:
        return self.peak

    def reset_peak_memory_stats(self, device: object) -> None:
        self.peak = 0

    def mem_get_info(self, device: object) -> tuple[int, int]:
        return self.total // 2, self.total


def checks(
    monkeypatch: pytest.MonkeyPatch, cuda: FakeCuda, driver: int | None = None, full=torch.full
) -> dict[str, Verdict]:  # type: ignore[no-untyped-def]
    def counted_full(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = full(*args, **{**kwargs, "device": "cpu"})
        cuda.peak += out.numel() * 4
        return out

    fake = SimpleNamespace(
        cuda=cuda,
        version=SimpleNamespace(cuda="13.0"),
        full=counted_full,
        float32=torch.float32,
        OutOfMemoryError=torch.OutOfMemoryError,
    )
    monkeypatch.setattr(memory, "torch", fake)
    monkeypatch.setattr(memory, "CHUNK", MIB)  # 1 MiB chunks stand in for 1 GiB ones
    monkeypatch.setattr(memory, "driver_total", lambda index: driver)
    return {v.check: v for v in memory.check_memory(torch.device("cpu"), 0.25, cycles=2)}


def test_clean_cycles_pass_and_a_driver_that_agrees_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    found = checks(monkeypatch, FakeCuda(), driver=int(64 * MIB * 1.01))
    assert found["memory-cycles"].status == Status.PASS, found["memory-cycles"].explanation
    cycles = found["memory-cycles"]
    assert (
        cycles.explanation
        == "2 cycles of allocating 0 GiB, writing and freeing it on cpu: peak 25% of the pool, all returned"
    )
    assert cycles.numbers["peak_share"] == cycles.numbers["peak_bytes"] / (64 * MIB) == 0.25
    assert cycles.numbers["target_bytes"] == 8 * MIB  # a quarter of the 32 MiB free
    assert found["memory-driver"].status == Status.PASS
    assert found["memory-driver"].explanation == (
        "torch sees 0.06 GiB on cpu, the driver 0.06 GiB (1.0% reserved by the driver and runtime)"
    )
    assert found["memory-driver"].numbers["gap"] == pytest.approx(0.0099, abs=1e-3)
    assert "memory-driver" not in checks(monkeypatch, FakeCuda(), driver=None)  # no driver figure: no verdict


def test_bytes_not_freed_fail_the_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    verdict = checks(monkeypatch, FakeCuda(leak=4096))["memory-cycles"]
    assert verdict.status == Status.FAIL
    assert verdict.explanation == "cycle 0: 4096 bytes not freed; cycle 1: 8192 bytes not freed"


def test_memory_that_does_not_hold_its_values_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def forgetful(size, value, **kwargs):  # type: ignore[no-untyped-def]
        out = torch.full(size, value, **kwargs)
        out[0] += 1.0  # the first sampled element of every chunk comes back wrong
        return out

    verdict = checks(monkeypatch, FakeCuda(), full=forgetful)["memory-cycles"]
    assert verdict.status == Status.FAIL
    assert "cycle 0: allocated memory did not hold the values written" in verdict.explanation


@pytest.mark.parametrize("driver_share", [1.10, 0.95])
def test_a_gap_between_torch_and_the_driver_warns(monkeypatch: pytest.MonkeyPatch, driver_share: float) -> None:
    """More than 5% of the driver's memory out of torch's sight, or torch seeing more than the driver, warns."""
    verdict = checks(monkeypatch, FakeCuda(), driver=int(64 * MIB * driver_share))["memory-driver"]
    assert verdict.status == Status.WARN, verdict.explanation
    assert verdict.explanation.startswith("torch sees 0.06 GiB on cpu, the driver")


def test_a_driver_that_agrees_to_the_byte_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    verdict = checks(monkeypatch, FakeCuda(), driver=64 * MIB)["memory-driver"]
    assert verdict.status == Status.PASS and verdict.numbers["gap"] == 0.0


def test_running_out_of_memory_fails_the_cycle_quoting_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    free = SimpleNamespace(someone_else=False)  # nobody else holds memory: rigcheck's own defect
    monkeypatch.setattr(memory, "classify", lambda state, what: free)
    monkeypatch.setattr(memory, "read_memory", lambda device: None)

    def runs_out(size, value, **kwargs):  # type: ignore[no-untyped-def]
        if len(made) % 8 == 2:  # the third chunk of every cycle does not fit
            made.append(1)
            raise torch.OutOfMemoryError("CUDA out of memory. " + "Tried to allocate 1.00 GiB. " * 10)
        made.append(1)
        return torch.full(size, value, **kwargs)

    verdict = checks(monkeypatch, FakeCuda(), full=runs_out)["memory-cycles"]
    assert verdict.status == Status.FAIL
    first = verdict.explanation.split("; ")[0]
    assert first.startswith("cycle 0: out of memory after 2 GiB: CUDA out of memory. Tried to allocate")
    assert len(first) == len("cycle 0: out of memory after 2 GiB: ") + 120  # the error quoted to 120 characters


def test_memory_taken_by_another_process_mid_cycle_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41: another process took the memory while the cycles ran (a FAIL on the old code)."""
    from rigcheck.engine.stages.common import oom

    def runs_out(size, value, **kwargs):  # type: ignore[no-untyped-def]
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

    held = oom.MemoryState(80 * 2**30, 2**30, 0, (oom.Holder(890, 77 * 2**30),))
    monkeypatch.setattr(memory, "read_memory", lambda device: held)
    verdict = checks(monkeypatch, FakeCuda(), full=runs_out)["memory-cycles"]
    assert verdict.status == Status.INCONCLUSIVE and "pid 890 (77.0 GiB)" in verdict.explanation


def test_a_chunk_is_one_gib_as_the_out_of_memory_words_count_it() -> None:
    """The other tests shrink CHUNK to 1 MiB, so none sees its real size: pinned here. The words count chunks as
    GiB ("out of memory after N GiB"); 3**30 bytes is no whole number of float32 elements, so the sums read back
    at 64 Ki strides miss the expected ones and every healthy GPU would fail; 1 byte would never fill a GPU."""
    assert memory.CHUNK == 2**30
    assert (memory.CHUNK // 4) % (1 << 16) == 0  # the read-back stride divides a chunk: the expected sums hold
