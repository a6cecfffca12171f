"""Hardware look-alikes: NVML (hw.nvml's calls, and the C stand-in built), pyamdgpuinfo, amdgpu sysfs, psutil."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from ci_tools import need
from rigcheck.engine.hw.nvml import (
    FUNCTION_NOT_FOUND,
    NOT_SUPPORTED,
    GpuProcess,
    Memory,
    NvmlFailure,
    PciInfo,
    ProcessSample,
    Utilization,
)
from rigcheck.engine.telemetry.sample import Sample

NOT_FOUND = 6


@dataclass(frozen=True)
class FakeGpuProcess:
    """A process as NVML lists it, with the name /proc would give and its SM use (None: no sample)."""

    pid: int
    name: str
    memory: int | None = 2**30
    sm: float | None = None


class FakeNvml:
    """Answers like an opened hw.nvml.Nvml for H200-like GPUs, one per bus id; `broken` names calls that
    fail with Not Supported (missing sensors); `processes` maps a device index to the compute processes on it."""

    def __init__(  # type: ignore[no-untyped-def]
        self,
        sm_clock: int = 1980,
        reasons: int = 0,
        pids: tuple[int, ...] = (),
        broken=(),
        bus_ids: tuple[str | bytes, ...] = (b"00000000:1B:00.0",),
        processes: dict[int, list[FakeGpuProcess]] | None = None,
        power: int = 126_370,
        limit: int = 700_000,
        default_limit: int = 700_000,
    ) -> None:
        self.sm_clock, self.reasons, self.pids, self.broken = sm_clock, reasons, pids, set(broken)
        self.power, self.limit, self.default_limit = power, limit, default_limit  # mW
        self.bus_ids = bus_ids
        self.processes = processes or {}
        self.util_calls: list[int] = []
        self.shut = False

    def _fails(self, name: str) -> NvmlFailure | None:
        return NvmlFailure(NOT_SUPPORTED, f"{name}: Not Supported") if name in self.broken else None

    def _index(self, handle: str) -> int:
        return int(handle.removeprefix("handle"))

    def process_name(self, pid: int) -> str:
        """What NvmlSource's `name_of` would read from /proc/PID/comm."""
        found = [p.name for procs in self.processes.values() for p in procs if p.pid == pid]
        return found[0] if found else "?"

    def close(self) -> None:
        self.shut = True

    def count(self) -> int:
        return len(self.bus_ids)

    def handle_by_bus_id(self, address: str) -> NvmlFailure:
        return NvmlFailure(FUNCTION_NOT_FOUND, "a driver without the by-address call: hw.gpu_at reads each GPU's")

    def handle(self, index: int) -> str:
        return f"handle{index}"

    def name(self, handle: str) -> str:
        return "NVIDIA H200"

    def pci_info(self, handle: str) -> PciInfo | NvmlFailure:
        bus_id = self.bus_ids[self._index(handle)]
        text = bus_id.decode() if isinstance(bus_id, bytes) else bus_id
        return self._fails("pci") or PciInfo(text, 0, int(text.split(":")[1], 16), 0)

    def uuid(self, handle: str) -> str | NvmlFailure:
        return self._fails("uuid") or f"GPU-00000000-0000-0000-0000-00000000000{self._index(handle)}"

    def max_clock(self, handle: str, kind: int) -> int:
        return 1980 if kind == 1 else 3201

    def enforced_power_limit(self, handle: str) -> int:
        return self.limit  # mW

    def default_power_limit(self, handle: str) -> int | NvmlFailure:
        return self._fails("default power limit") or self.default_limit

    def power_limit_range(self, handle: str) -> tuple[int, int] | NvmlFailure:
        return self._fails("power limit range") or (200_000, 700_000)

    def clock(self, handle: str, kind: int) -> int | NvmlFailure:
        return self._fails("clock") or (self.sm_clock if kind == 1 else 3201)

    def temperature(self, handle: str, sensor: int = 0) -> int | NvmlFailure:
        return self._fails("temperature") or 39

    def power_usage(self, handle: str) -> int | NvmlFailure:
        return self._fails("power") or self.power  # mW

    def utilization(self, handle: str) -> Utilization:
        return Utilization(gpu=97, memory=40)

    def memory(self, handle: str) -> Memory:
        return Memory(total=150_754_820_096, free=0, used=648_347_648)

    def memory_v2(self, handle: str) -> NvmlFailure:
        return NvmlFailure(FUNCTION_NOT_FOUND, "nvmlDeviceGetMemoryInfo_v2 is not in this driver's NVML")

    def clock_event_reasons(self, handle: str) -> int:
        return self.reasons

    def compute_processes(self, handle: str) -> list[GpuProcess]:
        listed = [GpuProcess(p, 1) for p in self.pids if self._index(handle) == 0]
        listed += [GpuProcess(p.pid, p.memory) for p in self.processes.get(self._index(handle), [])]
        return listed

    def process_utilization(self, handle: str, since_us: int) -> list[ProcessSample] | NvmlFailure:
        """Like the driver: NotFound when it holds no sample newer than `since_us`."""
        failed = self._fails("process utilization")
        if failed:
            return failed
        self.util_calls.append(since_us)
        procs = [p for p in self.processes.get(self._index(handle), []) if p.sm is not None]
        if not procs:
            return NvmlFailure(NOT_FOUND, "Not Found")
        stamp = since_us + 1000
        return [ProcessSample(p.pid, stamp, p.sm) for p in procs]  # type: ignore[arg-type]


def build_fake_nvml(folder: Path) -> Path:
    """tests/fake_nvml_lib.c compiled into `folder`: a real shared library for hw.nvml's ctypes calls."""
    need("gcc")  # skips where missing; under CI=true, where .ci/run installs it, fails
    gcc = shutil.which("gcc") or "gcc"
    library = folder / "libfakenvml.so"
    source = Path(__file__).resolve().parent / "fake_nvml_lib.c"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


class FakeAmdGpu:
    name = "AMD Radeon 8060S"

    def __init__(self) -> None:
        self.memory_info = {"vram_size": 512 * 2**20, "gtt_size": int(94.94 * 2**30)}

    def query_sclk(self) -> float:
        return 2_084_000_000.0  # Hz

    def query_mclk(self) -> float:
        return 1_000_000_000.0

    def query_max_clocks(self) -> dict:
        return {"sclk_max": 2_900_000_000, "mclk_max": 1_000_000_000}

    def query_temperature(self) -> float:
        return 61.0

    def query_power(self) -> float:
        raise RuntimeError("no average power sensor")

    def query_load(self) -> float:
        return 0.42

    def query_vram_usage(self) -> int:
        return 100 * 2**20

    def query_gtt_usage(self) -> int:
        return 3 * 2**30


class FakeAmdModule:
    def detect_gpus(self) -> int:
        return 1

    def get_gpu(self, index: int) -> FakeAmdGpu:
        return FakeAmdGpu()


def rapl_tree(root: Path, packages: dict[str, int], wrap: int = 262_143_328_850) -> Path:
    """A fake /sys/class/powercap: one package zone per entry (name -> energy_uj), each with a core
    sub-zone and a dram sub-zone that must not be counted again, and an mmio duplicate."""
    for index, (name, energy) in enumerate(packages.items()):
        zone = root / f"intel-rapl:{index}"
        for sub, sub_name in ((f"intel-rapl:{index}:0", "core"), (f"intel-rapl:{index}:1", "dram")):
            (root / sub).mkdir(parents=True)
            (root / sub / "name").write_text(sub_name + "\n")
            (root / sub / "energy_uj").write_text("5\n")
        zone.mkdir(parents=True, exist_ok=True)
        (zone / "name").write_text(name + "\n")
        (zone / "energy_uj").write_text(f"{energy}\n")
        (zone / "max_energy_range_uj").write_text(f"{wrap}\n")
    (root / "intel-rapl-mmio:0").mkdir(exist_ok=True)
    (root / "intel-rapl-mmio:0" / "name").write_text("package-0\n")
    (root / "intel-rapl-mmio:0" / "energy_uj").write_text("1\n")
    return root


def proc_tree(root: Path, processes: dict[int, tuple[str, int]], parents: dict[int, int] | None = None) -> Path:
    """A fake /proc: pid -> (name, CPU ticks used, split between user and system); parents default to 1."""
    for pid, (name, ticks) in processes.items():
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        ppid = (parents or {}).get(pid, 1)
        fields = ["S", str(ppid), *["0"] * 9, str(ticks - ticks // 2), str(ticks // 2), *["0"] * 10]
        (root / str(pid) / "stat").write_text(f"{pid} ({name}) {' '.join(fields)}\n")
    (root / "self").mkdir(exist_ok=True)
    (root / "stat").write_text("cpu 1 2 3 4\n")
    return root


def amd_sysfs_tree(root: Path) -> Path:
    """A fake /sys/class/drm with one APU (card1) and a connector entry that must be ignored."""
    device = root / "devices" / "0000:c5:00.0"
    hwmon = device / "hwmon" / "hwmon3"
    hwmon.mkdir(parents=True)
    files = {
        device / "vendor": "0x1002",
        device / "gpu_busy_percent": "87",
        device / "mem_info_vram_total": str(512 * 2**20),
        device / "mem_info_vram_used": str(200 * 2**20),
        device / "mem_info_gtt_total": str(int(94.94 * 2**30)),
        device / "mem_info_gtt_used": str(5 * 2**30),
        device / "pp_dpm_sclk": "0: 600Mhz\n1: 1059Mhz *\n2: 2900Mhz\n",
        hwmon / "temp1_input": "55000",
        hwmon / "power1_average": "35000000",
    }
    for path, text in files.items():
        path.write_text(text + "\n")
    drm = root / "drm"
    (drm / "card1").mkdir(parents=True)
    (drm / "card1" / "device").symlink_to(device)
    (drm / "card1-eDP-1").mkdir()
    return drm


FAKE_CLOCK = [1000.0]  # advanced by tests; HostSource reads it through its `clock` argument


class FakeProcess:
    def __init__(self, pid: int, percent: float, children: list[FakeProcess] | None = None, name: str = "x") -> None:
        self.pid, self.percent, self._children, self.name = pid, percent, children or [], name

    def children(self, recursive: bool = False) -> list[FakeProcess]:
        return list(self._children)

    def cpu_percent(self, interval: float | None = None) -> float:
        return self.percent

    def cpu_times(self) -> SimpleNamespace:
        """CPU seconds that grow at `percent` per second of the fake clock, as a busy process's would."""
        return SimpleNamespace(user=FAKE_CLOCK[0] * self.percent / 100.0, system=0.0)


class FakePsutil:
    """psutil look-alike: 4 CPUs, three of them fully busy, of which rigcheck's tree uses half a CPU;
    of the others, "burn" keeps two CPUs busy and "editor" half of one."""

    def __init__(self) -> None:
        self.tree = FakeProcess(100, 20.0, [FakeProcess(101, 30.0, name="stage")], name="rigcheck")
        self.others = [
            FakeProcess(7, 1.0, name="idle"),
            FakeProcess(500, 200.0, name="burn"),
            FakeProcess(501, 50.0, name="editor"),
        ]

    def process_iter(self, attrs: list[str]) -> list[SimpleNamespace]:
        every = [
            (self.tree, 1),
            *((child, self.tree.pid) for child in self.tree.children()),
            *((p, 1) for p in self.others),
        ]
        return [
            SimpleNamespace(pid=p.pid, info={"name": p.name, "cpu_times": p.cpu_times(), "ppid": ppid})
            for p, ppid in every
        ]

    def cpu_percent(self, percpu: bool = False) -> list[float]:
        return [100.0, 100.0, 100.0, 0.0]

    def cpu_count(self) -> int:
        return 4

    def Process(self, pid: int) -> FakeProcess:
        return next(p for p in [self.tree, *self.tree.children()] if p.pid == pid)

    def getloadavg(self) -> tuple[float, float, float]:
        return (3.1, 2.0, 1.0)

    def cpu_freq(self) -> SimpleNamespace:
        return SimpleNamespace(current=3200.0, min=400.0, max=5100.0)

    def sensors_temperatures(self) -> dict:
        return {"k10temp": [SimpleNamespace(label="Tctl", current=71.5)]}


class FakeSampler:
    """Stands in for the telemetry Sampler with fixed samples, so app screens are deterministic."""

    interval = 0.1

    def __init__(self, samples: list, notes: tuple[str, ...] = ()) -> None:  # type: ignore[type-arg]
        self.buffer = list(samples)
        self.notes = list(notes)
        self.host = SimpleNamespace(track=lambda pid: None)
        self.listeners: list = []  # type: ignore[type-arg]

    def latest(self):  # type: ignore[no-untyped-def]
        return self.buffer[-1] if self.buffer else None

    def window(self, t0: float, t1: float) -> list:  # type: ignore[type-arg]
        return [s for s in self.buffer if t0 <= s.t <= t1]

    def add_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.listeners.append(listener)

    def remove_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        if listener in self.listeners:
            self.listeners.remove(listener)

    def stop(self) -> None:
        pass


def h200_samples(count: int = 120, others: float = 1.0) -> list:  # type: ignore[type-arg]
    """A minute of an H200 warming up under a bf16 sweep: the clock falls from 1980 to 1450 MHz at the power cap."""
    from rigcheck.engine.telemetry.nvml import NvmlSource
    from rigcheck.engine.telemetry.sample import HostSample, Sample

    samples = []
    for i in range(count):
        clock = 1980 if i < count // 2 else 1450
        nvml = FakeNvml(sm_clock=clock, reasons=0x4 if clock < 1980 else 0)
        host = HostSample(
            cpus=16,
            load1=2.5,
            busy_cpus=others + 1.0,
            own_cpus=1.0,
            per_cpu_pct=tuple(float((i * 7 + c * 13) % 100) for c in range(16)),
        )
        samples.append(Sample(1_000_000.0 + i * 0.5, host, tuple(NvmlSource(nvml).read())))
    return samples


class StartingSampler(FakeSampler):
    """Plays samples to listeners as the real sampler does; the first covers rigcheck's own start-up,
    when its CPU time is not yet known, so all of it reads as other processes' load."""

    def __init__(self, samples: list[Sample]) -> None:
        super().__init__(samples)
        self.listeners: list = []  # type: ignore[type-arg]
        self.stopped = False

    def add_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.listeners.append(listener)

    def start(self) -> StartingSampler:
        for sample in self.buffer:
            for listener in self.listeners:
                listener(sample)
        return self

    def stop(self) -> None:
        self.stopped = True
