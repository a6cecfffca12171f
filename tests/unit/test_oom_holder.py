"""Someone else's GPU memory is never a FAIL (issue 41, item 3); an out-of-memory error with the GPU otherwise
free stays a defect to report."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.run import child
from rigcheck.engine.stage import StageSpec
from rigcheck.engine.stages.common import oom

GIB = 2**30
HOLDER_MESSAGE = (
    "CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.95 GiB "
    "is free. Process 890 has 77.17 GiB memory in use."
)
OWN_MESSAGE = "CUDA out of memory. Tried to allocate 80.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def test_another_process_holding_the_memory_is_a_skip_naming_it() -> None:
    state = oom.MemoryState(80 * GIB, 2 * GIB, 0, (oom.Holder(890, 77 * GIB),))
    found = oom.classify(state, "device copy 8 GiB")
    assert found.status == Status.SKIP and found.someone_else
    assert "pid 890 (77.0 GiB)" in found.words and "2.0 GiB free" in found.words


def test_an_unseen_holder_is_named_as_one_rigcheck_cannot_see() -> None:
    found = oom.classify(oom.MemoryState(80 * GIB, 2 * GIB, 0, ()), "device copy 8 GiB")
    assert found.status == Status.SKIP and "cannot see" in found.words


def test_out_of_memory_on_a_free_gpu_stays_a_defect() -> None:
    found = oom.classify(oom.MemoryState(80 * GIB, 79 * GIB, 0, ()), "device copy 64 GiB")
    assert found.status == Status.FAIL and "defect" in found.words


@pytest.mark.parametrize(("others", "status"), [(oom.OTHERS_MIN - 2**20, Status.FAIL), (oom.OTHERS_MIN, Status.SKIP)])
def test_the_edge_of_someone_elses_memory(others: int, status: Status) -> None:
    free = 80 * GIB - others - oom.CONTEXT_BYTES
    assert oom.classify(oom.MemoryState(80 * GIB, free, 0, ()), "x").status == status


def test_a_desktop_holding_a_few_mib_is_no_holder() -> None:
    state = oom.MemoryState(80 * GIB, 79 * GIB, 0, (oom.Holder(1200, 20 * 2**20),))
    assert oom.classify(state, "x").status == Status.FAIL


def test_rigcheck_own_reserve_is_not_someone_elses() -> None:
    state = oom.MemoryState(80 * GIB, 2 * GIB, 78 * GIB - oom.CONTEXT_BYTES, ())
    assert oom.classify(state, "x").status == Status.FAIL


def test_torch_message_names_the_holders() -> None:
    assert oom.holders_from_message(HOLDER_MESSAGE) == (oom.Holder(890, int(77.17 * GIB)),)
    assert oom.holders_from_message(OWN_MESSAGE) == ()


@pytest.mark.parametrize(
    ("wanted", "free", "got"),
    [(8 * GIB, 79 * GIB, 8 * GIB), (8 * GIB, 2 * GIB, GIB), (8 * GIB, None, 8 * GIB), (8 * GIB, 2**20, 0)],
)
def test_the_size_that_fits(wanted: int, free: int | None, got: int) -> None:
    assert oom.fitting(wanted, free) == got


class Pipe:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, item: Any) -> None:
        self.sent.append(item)


def raising(message: str) -> Any:
    class OutOfMemoryError(RuntimeError):
        pass

    def stage(context: Any) -> Any:
        raise OutOfMemoryError(message)
        yield  # a generator, as a stage is

    return lambda target: stage


@pytest.mark.parametrize(("message", "status"), [(HOLDER_MESSAGE, Status.SKIP), (OWN_MESSAGE, Status.FAIL)])
def test_a_stage_that_runs_out_of_memory(monkeypatch: pytest.MonkeyPatch, message: str, status: Status) -> None:
    """Failed on the old code: the child made every OutOfMemoryError the stage's FAIL, holder or not."""
    monkeypatch.setattr(child, "load_stage", raising(message))
    monkeypatch.setattr(
        oom, "read_memory", lambda device, text="": oom.MemoryState(None, None, 0, oom.holders_from_message(text))
    )
    pipe = Pipe()
    child.run_stage(pipe, StageSpec("bandwidth", "cuda:0", "quick"), "x:y", False)  # type: ignore[arg-type]
    verdicts = [e for e in pipe.sent if isinstance(e, Verdict)]
    assert [v.status for v in verdicts] == [status]
    if status == Status.SKIP:
        assert "pid 890" in verdicts[0].explanation


def drained(generator: Any) -> tuple[list[Any], Any]:
    said = []
    while True:
        try:
            said.append(next(generator))
        except StopIteration as stop:
            return said, stop.value


@pytest.mark.parametrize(
    ("state", "size", "statuses"),
    [
        (oom.MemoryState(80 * GIB, 79 * GIB, 0, ()), 16 * GIB, []),  # a free GPU: the whole size, nothing said
        (oom.MemoryState(80 * GIB, 2 * GIB, 0, (oom.Holder(890, 77 * GIB),)), GIB, [Status.SKIP]),
        (oom.MemoryState(8 * GIB, 7 * GIB, 0, ()), 4 * GIB, []),  # a small GPU of its own: smaller, in the log
    ],
)
def test_bandwidth_measures_what_fits(monkeypatch: pytest.MonkeyPatch, state: Any, size: int, statuses: Any) -> None:
    """Failed on the old code: bandwidth asked for its whole size and raised OutOfMemoryError (the stage's FAIL)."""
    import torch
    from rigcheck.engine.stages import bandwidth

    monkeypatch.setattr(bandwidth, "read_memory", lambda device, text="": state)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    said, got = drained(bandwidth.fitted(torch.device("cuda:0"), 8 * GIB, "device-copy", "device copy 8 GiB", 2))
    assert got == size // 2  # each of the copy's two buffers
    assert [v.status for v in said if isinstance(v, Verdict)] == statuses
    if statuses:
        assert "pid 890" in said[0].explanation and "measured at 0.5 GiB instead" in said[0].explanation


def test_an_allocation_failure_by_another_name_is_read_as_out_of_memory() -> None:
    assert child.out_of_memory_error(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))
    assert child.out_of_memory_error(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not child.out_of_memory_error(RuntimeError("CUDA error: an illegal memory access was encountered"))
