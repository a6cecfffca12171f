"""The words, numbers and edges of engine/stages/common/oom.py (issue 45's mutation scoring): the whole sentence a
user reads for someone else's memory and for rigcheck's own defect, the numbers stored with it, the holders named
(the three largest, NVML's list before torch's message), the sizes that fit at each edge, and the reading of the
GPU's memory in a stage child with torch's and NVML's answers faked. Every expected value is worked by hand."""

from __future__ import annotations

import os
from typing import Any

import pytest
from rigcheck.engine.events import Status
from rigcheck.engine.hw.nvml_types import NvmlFailure
from rigcheck.engine.stages.common import oom

GIB = 2**30
MIB = 2**20
H = oom.Holder


# -- the memory others hold --


def test_others_is_what_the_driver_says_is_used_less_this_process_and_a_context() -> None:
    # 80 - 2 - 1 GiB - 600 MiB = 76 GiB + 424 MiB
    assert oom.MemoryState(80 * GIB, 2 * GIB, GIB, ()).others == 76 * GIB + 424 * MIB
    assert oom.MemoryState(10 * GIB, 10 * GIB, 0, ()).others == 0  # never below nothing


@pytest.mark.parametrize(("total", "free"), [(None, 2 * GIB), (80 * GIB, None), (None, None)])
def test_with_no_reading_others_is_what_the_holders_hold(total: int | None, free: int | None) -> None:
    state = oom.MemoryState(total, free, 5 * GIB, (H(1, 3 * GIB), H(2, None), H(3, GIB)))
    assert state.others == 4 * GIB


def test_the_finding_is_someone_else_s_unless_it_fails() -> None:
    assert oom.OomFinding(Status.SKIP, "", {}).someone_else
    assert oom.OomFinding(Status.INCONCLUSIVE, "", {}).someone_else
    assert not oom.OomFinding(Status.FAIL, "", {}).someone_else


# -- the words and numbers --


def test_someone_else_s_memory_in_the_words_a_user_reads() -> None:
    state = oom.MemoryState(80 * GIB, 2 * GIB, 0, (H(890, 77 * GIB),))
    found = oom.classify(state, "device copy 8 GiB")
    assert found.status == Status.SKIP
    # others: 80 - 2 - 600 MiB = 77.41 GiB
    assert found.words == (
        "device copy 8 GiB skipped: it does not fit in the 2.0 GiB free; 77.4 GiB of 80.0 GiB is held by pid 890 "
        "(77.0 GiB), not rigcheck; next: free that memory (or use another GPU) and run again"
    )
    assert found.numbers == {
        "oom": True,
        "total_bytes": 80 * GIB,
        "free_bytes": 2 * GIB,
        "others_bytes": 77 * GIB + 424 * MIB,
        "holders": [{"pid": 890, "used": 77 * GIB}],
        "someone_else": True,
    }


def test_a_defect_in_rigcheck_s_sizes_in_the_words_a_user_reads() -> None:
    found = oom.classify(oom.MemoryState(80 * GIB, 79 * GIB, 0, ()), "device copy 64 GiB")
    assert found.status == Status.FAIL
    assert found.words == (
        "device copy 64 GiB ran out of memory with the GPU otherwise free (79.0 GiB free of 80.0 GiB, no other "
        "process holding any): rigcheck asked for more than this GPU has; a defect in rigcheck: please report it "
        "with `rigcheck export last`"
    )
    assert found.numbers["someone_else"] is False and found.numbers["others_bytes"] == 424 * MIB
    assert found.numbers["holders"] == [] and found.numbers["oom"] is True


def test_unknown_memory_reads_as_a_question_mark() -> None:
    found = oom.classify(oom.MemoryState(None, None, 0, (H(7, None), H(8, 3 * GIB // 2))), "x")
    assert found.status == Status.SKIP
    assert "does not fit in the ? free; 1.5 GiB of ? is held by pid 8 (1.5 GiB), pid 7 (?), not" in found.words
    assert found.numbers["holders"] == [{"pid": 7, "used": None}, {"pid": 8, "used": 3 * GIB // 2}]


@pytest.mark.parametrize(("held", "status"), [(GIB - 1, Status.FAIL), (GIB, Status.SKIP)])
def test_a_listed_holder_counts_where_the_driver_s_numbers_say_little(held: int, status: Status) -> None:
    """80 GiB, 79.5 free: the driver shows none held by others; NVML lists a process holding `held`."""
    state = oom.MemoryState(80 * GIB, 79 * GIB + 512 * MIB, 0, (H(44, held),))
    assert state.others == 0
    assert oom.classify(state, "x").status == status
    unknown = oom.MemoryState(80 * GIB, 79 * GIB + 512 * MIB, 0, (H(44, held), H(45, None)))
    assert oom.classify(unknown, "x").status == status  # a holder of unknown memory adds nothing to it


def test_the_three_largest_holders_are_named_largest_first() -> None:
    state = oom.MemoryState(80 * GIB, GIB, 0, (H(1, GIB), H(2, 5 * GIB), H(3, None), H(4, 3 * GIB)))
    assert oom.who(state) == "pid 2 (5.0 GiB), pid 4 (3.0 GiB), pid 1 (1.0 GiB)"
    assert oom.who(oom.MemoryState(80 * GIB, GIB, 0, ())) == (
        "a process rigcheck cannot see (another container or PID namespace)"
    )


def test_the_holders_torch_names_in_each_unit_leaving_this_process_out() -> None:
    message = (
        "Process 12 has 512.00 MiB memory in use. Process 13 has 2 GB memory in use. Process 14 has 100 KiB "
        f"memory in use. Process 15 has 3 MB memory in use. Process 16 has 1.5 GiB memory in use. Process 17 has "
        f"8 KB memory in use. Process {os.getpid()} has 9.00 GiB memory in use. Process {os.getpid() + 1} has 1 GiB "
        "memory in use."
    )
    assert oom.holders_from_message(message) == (
        H(12, 512 * MIB),
        H(13, 2 * GIB),
        H(14, 100 * 1024),
        H(15, 3 * MIB),
        H(16, 3 * GIB // 2),
        H(17, 8 * 1024),
        H(os.getpid() + 1, GIB),
    )


# -- the size that fits --


@pytest.mark.parametrize(
    ("wanted", "free", "got"),
    [
        (8 * GIB, 10 * GIB, 8 * GIB),  # 8 of 10 x 0.8 = 8: the whole size
        (8 * GIB, 10 * GIB - 5, 4 * GIB),  # just under: half
        (256 * MIB, 100 * MIB, 64 * MIB),  # 256 > 80, 128 > 80, 64 fits
        (128 * MIB, 100 * MIB, 64 * MIB),  # at twice the floor it is halved once more
        (256 * MIB, 50 * MIB, 0),  # the floor, 64, is over 40: nothing fits
        (100 * MIB, 100 * MIB, 0),  # 100 > 80, but under twice the floor: not halved, and no fit
        (100 * MIB, 110 * MIB, 0),  # 100 > 88, under twice the floor, though it is under the 110 free: no fit
        (64 * MIB, 80 * MIB, 64 * MIB),  # 64 = 80 x 0.8
    ],
)
def test_the_size_that_fits_at_each_edge(wanted: int, free: int, got: int) -> None:
    assert oom.fitting(wanted, free) == got


def test_the_size_that_fits_with_another_floor_and_share() -> None:
    assert oom.fitting(8 * GIB, 4 * GIB, floor=GIB, share=0.5) == 2 * GIB
    assert oom.fitting(8 * GIB, GIB, floor=4 * GIB, share=1.0) == 0  # 8 >= 2 x 4: 4; 4 < 8: stop; 4 > 1: none


# -- reading the GPU's memory in a stage child --


class FakeTorchCuda:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.emptied = 0

    def empty_cache(self) -> None:
        self.emptied += 1

    def mem_get_info(self, device: Any) -> tuple[int, int]:
        if self.fail:
            raise RuntimeError("no CUDA")
        return 2 * GIB, 80 * GIB

    def memory_reserved(self, device: Any) -> int:
        return GIB


def faked(monkeypatch: pytest.MonkeyPatch, cuda: FakeTorchCuda, holders: Any) -> None:
    import torch

    for name in ("empty_cache", "mem_get_info", "memory_reserved"):
        monkeypatch.setattr(torch.cuda, name, getattr(cuda, name))
    from rigcheck.engine.stages.common import limits

    monkeypatch.setattr(limits, "bus_id", lambda device: "0000:18:00.0")
    if isinstance(holders, Exception):

        def raising(bus: Any) -> Any:
            raise holders

        monkeypatch.setattr(oom, "nvml_holders", raising)
    else:
        monkeypatch.setattr(oom, "nvml_holders", lambda bus: holders if bus == "0000:18:00.0" else ())


MESSAGE = "CUDA out of memory. Process 890 has 77.00 GiB memory in use."


def test_the_memory_read_in_the_child_is_torch_s_and_nvml_s(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeTorchCuda()
    faked(monkeypatch, cuda, (H(5, 3 * GIB),))
    assert oom.read_memory("cuda:0", MESSAGE) == oom.MemoryState(80 * GIB, 2 * GIB, GIB, (H(5, 3 * GIB),))
    assert cuda.emptied == 1


def test_with_nvml_silent_the_holders_are_torch_s_message_s(monkeypatch: pytest.MonkeyPatch) -> None:
    faked(monkeypatch, FakeTorchCuda(), ())
    assert oom.read_memory("cuda:0", MESSAGE).holders == (H(890, 77 * GIB),)


def test_a_reading_that_raises_is_unknown_never_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    faked(monkeypatch, FakeTorchCuda(fail=True), RuntimeError("no NVML"))
    assert oom.read_memory("cuda:0", MESSAGE) == oom.MemoryState(None, None, 0, (H(890, 77 * GIB),))


class FakeNvml:
    closed = 0

    def __init__(self, compute: Any, graphics: Any) -> None:
        self.compute, self.graphics = compute, graphics

    def compute_processes(self, handle: Any) -> Any:
        return self.compute

    def graphics_processes(self, handle: Any) -> Any:
        return self.graphics

    def close(self) -> None:
        FakeNvml.closed += 1


def nvml_faked(monkeypatch: pytest.MonkeyPatch, started: Any, handle: Any = "h") -> None:
    from rigcheck.engine.hw import gpu_at, nvml

    monkeypatch.setattr(nvml, "Nvml", FakeNvml)
    monkeypatch.setattr(nvml, "open_nvml", lambda: started)
    monkeypatch.setattr(gpu_at, "gpu_at", lambda found, bus: handle if bus == "0000:18:00.0" else None)
    FakeNvml.closed = 0


def test_nvml_s_compute_and_graphics_processes_other_than_this_one(monkeypatch: pytest.MonkeyPatch) -> None:
    later = os.getpid() + 1  # a pid after this one's is someone else's too
    compute = [H(10, 3 * GIB), H(os.getpid(), GIB), H(later, GIB)]
    nvml_faked(monkeypatch, FakeNvml(compute, [H(11, None)]))
    assert oom.nvml_holders("0000:18:00.0") == (H(10, 3 * GIB), H(later, GIB), H(11, None))
    assert FakeNvml.closed == 1
    nvml_faked(monkeypatch, FakeNvml(NvmlFailure(3, "no"), [H(11, 2)]))
    assert oom.nvml_holders("0000:18:00.0") == (H(11, 2),)
    nvml_faked(monkeypatch, FakeNvml([H(10, 1)], NvmlFailure(3, "no")))
    assert oom.nvml_holders("0000:18:00.0") == (H(10, 1),)


def test_no_nvml_or_no_gpu_at_the_bus_is_no_holder(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml_faked(monkeypatch, "NVML is not there")
    assert oom.nvml_holders("0000:18:00.0") == ()
    nvml_faked(monkeypatch, FakeNvml([H(10, 1)], []))
    assert oom.nvml_holders("0000:3b:00.0") == ()
    assert FakeNvml.closed == 1  # closed though no GPU was found


# -- the verdicts --


def test_the_oom_verdict_carries_the_message_and_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    state = oom.MemoryState(80 * GIB, 2 * GIB, 0, (H(890, 77 * GIB),))
    monkeypatch.setattr(oom, "read_memory", lambda device, text="": state)
    error = RuntimeError("m" * 400)
    verdict = oom.oom_verdict("bandwidth", "device copy", "cuda:1", "device copy 8 GiB", error)
    assert (verdict.stage, verdict.check, verdict.status, verdict.device) == (
        "bandwidth",
        "device copy",
        Status.SKIP,
        "cuda:1",
    )
    assert verdict.numbers["message"] == "m" * 300 and verdict.numbers["someone_else"] is True
    assert verdict.explanation.startswith("device copy 8 GiB skipped: it does not fit in the 2.0 GiB free")
    assert oom.oom_verdict("s", "c", None, "x", error).device == ""


def test_a_size_that_does_not_fit_names_the_holder_or_torch_s_words(monkeypatch: pytest.MonkeyPatch) -> None:
    held = oom.MemoryState(80 * GIB, 2 * GIB, 0, (H(890, 77 * GIB),))
    monkeypatch.setattr(oom, "read_memory", lambda device, text="": held)
    error = RuntimeError("Tried to allocate " + "x" * 200)
    skip = oom.does_not_fit("training", "train c64 b8192", "cuda:0", "train c64 b8192 bf16", error)
    assert skip.status == Status.SKIP and "held by pid 890 (77.0 GiB)" in skip.explanation
    assert skip.numbers["someone_else"] is True and skip.device == "cuda:0" and skip.check == "train c64 b8192"
    free = oom.MemoryState(8 * GIB, 7 * GIB, 0, ())
    monkeypatch.setattr(oom, "read_memory", lambda device, text="": free)
    small = oom.does_not_fit("training", "t", "cuda:0", "train c64 b8192 bf16", error)
    assert small.status == Status.SKIP and small.numbers == {}
    assert small.explanation == "train c64 b8192 bf16 does not fit: " + ("Tried to allocate " + "x" * 200)[:160]


def test_a_state_and_a_finding_are_values_hashable_and_never_changed() -> None:
    state = oom.MemoryState(80 * GIB, 2 * GIB, 0, (H(890, 77 * GIB),))
    finding = oom.OomFinding(Status.SKIP, "w", {})
    assert hash(state) == hash(oom.MemoryState(80 * GIB, 2 * GIB, 0, (H(890, 77 * GIB),)))
    for value in (state, finding):
        with pytest.raises(AttributeError):
            value.free = 0  # type: ignore[misc, union-attr]
    with pytest.raises(TypeError):
        hash(finding)  # its numbers are a dict: frozen, and still not hashable
