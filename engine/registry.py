"""The stages rigcheck knows, named by import path so the parent can list them without importing torch.

Adding a stage (docs/ADDING_A_STAGE.md has the whole guide) touches these files and no others:
1. `engine/stages/<name>.py` (or a package `engine/stages/<name>/` with `stage.py`): `run(context: StageContext) ->
   Iterator[Event]`, a generator of engine/events.py's dataclasses (Measurement, Verdict, Progress, LogLine). It
   imports only the standard library, numpy and torch (it runs in a spawned child, under any `--python`).
2. One `StageInfo(...)` below in `STAGES`: its name, its target ("module:function"), a one-line summary, its time
   limits, and the flags that say how the runner treats it (`throughput`, `per_device`, ...) and what its GPU
   figures are (`figure_kinds`: which settings in force can change them).
3. `tests/unit/test_<name>.py`: the stage's own rules, each fault beside a clean case (tests/unit/test_toy_stage.py
   runs a whole stage end to end from these files alone; tests/unit/test_stage_contract.py checks registrations).
Trust, the one cause, references, history, every export, the CLI and the app pick its figures up from the events.
"""

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
    per_device: bool = False  # on several GPUs: one child per GPU, all at once
    cpu_part: bool = False  # ...and its GPU-independent host work once, in one more child after them
    default_in: tuple[str, ...] = ("quick", "standard", "full")  # profiles whose `run` without stage names runs it
    timed: bool = False  # its `duration` option sets how long it runs, so its time limit grows with it
    min_gpus: int = 0  # fewer GPUs asked for by name: the parent SKIPs it without starting a child
    fresh_child: bool = False  # always in a fresh interpreter, never a warm child (see training's note)
    # What its GPU figures are beyond "a GPU figure", for the settings that change them (facts/settings.py): "blas"
    # (matrix multiplies: BLAS and math-mode settings), "alloc" (allocates as it goes: allocator settings), "links"
    # (collectives between GPUs: NCCL settings). FIGURE_KINDS lists them.
    figure_kinds: tuple[str, ...] = ()

    def timeout(self, profile: str, options: dict[str, object] | None = None) -> float:
        limit = self.timeouts.get(profile, max(self.timeouts.values()))
        duration = (options or {}).get("duration") if self.timed else None
        return max(limit, float(duration) + TIMED_SETUP_S) if isinstance(duration, int | float) else limit


FIGURE_KINDS = ("blas", "alloc", "links")  # the words `StageInfo.figure_kinds` may use

FLEET_HOSTS_STAGE = "fleet"  # the fleet run's host-against-host comparison, a stage row of its own
FLEET_LINKS_STAGE = "fleet-links"  # the fleet run's pairwise links between hosts

NOTHING_TO_LINK = "nothing to link; use --device all on a host with two or more"  # links, by child or parent

TIMED_SETUP_S = 180.0  # beyond --duration: start-up, warm-up and the verdicts


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
            "health",
            "rigcheck.engine.stages.health.stage:run",
            "the driver's own counters: ECC, retired pages or remapped rows, XIDs, PCIe link, power limit, MIG",
            {"quick": 60.0, "standard": 60.0, "full": 120.0},
        ),
        StageInfo(
            "verify",
            "rigcheck.engine.stages.verify.stage:run",
            "are the answers right: every dtype, the board network and memory against float64",
            {"quick": 240.0, "standard": 600.0, "full": 1200.0},
            per_device=True,
            figure_kinds=("alloc",),
        ),
        StageInfo(
            "hostbugs",
            "rigcheck.engine.stages.hostbugs.stage:run",
            "the host's own silent bugs: sgemm races by thread count, CPU/GPU results that do not repeat",
            {"quick": 240.0, "standard": 600.0, "full": 1800.0},
            per_device=True,
            cpu_part=True,
        ),
        StageInfo(
            "matmul",
            "rigcheck.engine.stages.matmul.stage:run",
            "matrix multiply sweep over sizes and dtypes, TFLOP/s against the datasheet (max-find option)",
            {"quick": 240.0, "standard": 600.0, "full": 1200.0},
            throughput=True,
            per_device=True,
            figure_kinds=("blas",),
        ),
        StageInfo(
            "bandwidth",
            "rigcheck.engine.stages.bandwidth:run",
            "memory bandwidth: device copy, host to device and back, pinned and pageable",
            {"quick": 120.0, "standard": 300.0, "full": 600.0},
            throughput=True,
            per_device=True,
        ),
        StageInfo(
            "links",
            "rigcheck.engine.stages.links.stage:run",
            "links between GPUs: topology, peer-to-peer copies, collectives through torch.distributed",
            {"quick": 600.0, "standard": 1200.0, "full": 1800.0},
            throughput=True,
            min_gpus=2,
            figure_kinds=("links",),
        ),
        StageInfo(
            "training",
            "rigcheck.engine.stages.training:run",
            "training throughput of the board network, GPU against CPU, fp32 and bf16",
            {"quick": 300.0, "standard": 600.0, "full": 1800.0},
            throughput=True,
            per_device=True,
            cpu_part=True,
            # Its small-batch GPU figures are bound by the host's Python overhead: in a warm child that had
            # run the earlier stages they came out 15-30% lower on an H200 (bench/RESULTS.md, issue 23).
            fresh_child=True,
            figure_kinds=("blas", "alloc"),
        ),
        StageInfo(
            "burn",
            "rigcheck.engine.stages.burn.stage:run",
            "sustained matmul on every GPU at once for --duration s: wrong elements, falling throughput, slow peers",
            {"quick": 240.0, "standard": 300.0, "full": 600.0},
            throughput=True,
            default_in=("full",),
            timed=True,
            figure_kinds=("blas",),
        ),
    )
}


def default_stages(profile: str) -> tuple[str, ...]:
    """What `rigcheck run` without stage names runs: every stage, except burn outside the full profile."""
    return tuple(name for name, info in STAGES.items() if profile in info.default_in)


DEFAULT_STAGES: tuple[str, ...] = default_stages("standard")


class UnknownStage(ValueError):
    pass


def resolve(names: list[str]) -> list[StageInfo]:
    """The StageInfo for each name, once each in order of first mention, or UnknownStage naming the valid ones."""
    infos = []
    for name in dict.fromkeys(names):
        if name not in STAGES:
            raise UnknownStage(f"unknown stage {name!r}; valid stages: {', '.join(STAGES)}")
        infos.append(STAGES[name])
    return infos
