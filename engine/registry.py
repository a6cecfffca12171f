"""The stages rigcheck knows, named by import path so the parent can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StageInfo:
    """A stage's name, where its function lives ("module:function"), and its time limit per profile."""

    name: str
    target: str
    summary: str
    timeouts: dict[str, float] = field(default_factory=lambda: {"quick": 120.0, "standard": 300.0, "full": 900.0})
    extra_paths: tuple[str, ...] = ()
    fingerprint: bool = True  # the child sends the environment fingerprint before the stage runs
    throughput: bool = False  # a quiet-host check runs before it

    def timeout(self, profile: str) -> float:
        return self.timeouts.get(profile, max(self.timeouts.values()))


STAGES: dict[str, StageInfo] = {
    info.name: info
    for info in (
        StageInfo(
            "probe",
            "rigcheck.engine.stages.probe:run",
            "what is installed and visible: interpreter, torch build, driver, devices, BLAS",
            {"quick": 90.0, "standard": 120.0, "full": 180.0},
        ),
        StageInfo(
            "verify",
            "rigcheck.engine.stages.verify:run",
            "are the answers right: every dtype, the board network and memory against float64",
            {"quick": 240.0, "standard": 600.0, "full": 1200.0},
        ),
        StageInfo(
            "hostbugs",
            "rigcheck.engine.stages.hostbugs:run",
            "the host's own silent bugs: sgemm races by thread count, CPU/GPU results that do not repeat",
            {"quick": 240.0, "standard": 600.0, "full": 1800.0},
        ),
        StageInfo(
            "matmul",
            "rigcheck.engine.stages.matmul:run",
            "matrix multiply sweep over sizes and dtypes, TFLOP/s against the datasheet (max-find option)",
            {"quick": 240.0, "standard": 600.0, "full": 1200.0},
            throughput=True,
        ),
        StageInfo(
            "bandwidth",
            "rigcheck.engine.stages.bandwidth:run",
            "memory bandwidth: device copy, host to device and back, pinned and pageable",
            {"quick": 120.0, "standard": 300.0, "full": 600.0},
            throughput=True,
        ),
        StageInfo(
            "links",
            "rigcheck.engine.stages.links:run",
            "links between GPUs: topology, peer-to-peer copies, collectives through torch.distributed",
            {"quick": 600.0, "standard": 1200.0, "full": 1800.0},
            throughput=True,
        ),
        StageInfo(
            "training",
            "rigcheck.engine.stages.training:run",
            "training throughput of the board network, GPU against CPU, fp32 and bf16",
            {"quick": 300.0, "standard": 600.0, "full": 1800.0},
            throughput=True,
        ),
    )
}

DEFAULT_STAGES: tuple[str, ...] = tuple(STAGES)


class UnknownStage(ValueError):
    pass


def resolve(names: list[str]) -> list[StageInfo]:
    """The StageInfo for each name, or UnknownStage naming the valid ones."""
    infos = []
    for name in names:
        if name not in STAGES:
            raise UnknownStage(f"unknown stage {name!r}; valid stages: {', '.join(STAGES)}")
        infos.append(STAGES[name])
    return infos
