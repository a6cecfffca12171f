"""The gate's stand-ins: tests/fake_nvml_gate.c built as libnvidia-ml.so.1, its fault file, and a kernel log."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ci_tools import skip_or_fail
from rigcheck.engine.gate.passive import GateResult, passive_check
from rigcheck.engine.gate.read import read_node
from rigcheck.engine.hw import nvml as hw_nvml
from rigcheck.engine.store import Store

SOURCE = Path(__file__).resolve().parent / "fake_nvml_gate.c"
BUS = {0: "0000:18:00", 1: "0000:19:00"}  # the fake's GPUs, as the driver writes them in XID lines


def build_gate_nvml(folder: Path) -> Path:
    """The fake compiled into `folder` as libnvidia-ml.so.1, so LD_LIBRARY_PATH=folder points any process at it."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        skip_or_fail("no C compiler (gcc) to build the stand-in NVML library")
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / "libnvidia-ml.so.1"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(SOURCE)], check=True)
    return library


def write_state(path: Path, **faults: int | str) -> None:
    """The fake's faults, replaced whole (the library re-reads the file on every call)."""
    text = "".join(f"{key}={value}\n" for key, value in faults.items())
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def kmsg_line(seq: int, gpu: int, code: int, text: str = "pid=1234, name=python") -> str:
    return f"3,{seq},{seq * 1000},-;NVRM: Xid (PCI:{BUS[gpu]}): {code}, {text}\n"


def gate_env(library: Path, state: Path) -> dict[str, str]:
    return os.environ | {"LD_LIBRARY_PATH": str(library.parent), "FAKE_NVML_STATE": str(state)}


@pytest.fixture(scope="session", name="gate_library")
def gate_library_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_gate_nvml(tmp_path_factory.mktemp("gate-nvml"))


@pytest.fixture(name="node")
def node_fixture(gate_library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(gate_library))
    state = tmp_path / "nvml-state"
    write_state(state)
    monkeypatch.setenv("FAKE_NVML_STATE", str(state))
    return Node(tmp_path, state)


class Node:
    """One fake node: its NVML faults, kernel log, empty PCI and drm trees, and its store."""

    def __init__(self, folder: Path, state: Path) -> None:
        self.folder, self.state = folder, state
        self.log = folder / "kmsg"
        self.log.write_text("6,1,1000,-;Linux version 6.1\n")
        (folder / "pci").mkdir()
        (folder / "drm").mkdir()
        self.store = Store(folder / "store.db")

    def faults(self, **faults: int | str) -> None:
        write_state(self.state, **faults)

    def xid(self, seq: int, gpu: int, code: int, text: str = "pid=1234, name=python") -> None:
        with self.log.open("a") as log:
            log.write(kmsg_line(seq, gpu, code, text))

    def check(self, expect: int | None = None, idle: bool = False, store: bool = True) -> GateResult:
        reading = read_node(self.log, drm_root=self.folder / "drm", pci_root=self.folder / "pci")
        return passive_check(self.store if store else None, expect, expect_idle=idle, reading=reading)
