"""Answers that measure nothing come at once (issue 34): a host with no GPU driver refuses `--device cuda:N`
and picks the CPU without importing torch (4-7 s on a busy 2-core host)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rigcheck.engine.hw import gpu_nodes
from rigcheck.engine.run import options
from rigcheck.tui.cli import main


def test_no_driver_trace_means_surely_no_gpu(tmp_path: Path) -> None:
    assert gpu_nodes.surely_no_gpu(str(tmp_path), "linux")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidia0").touch()
    assert not gpu_nodes.surely_no_gpu(str(tmp_path), "linux")
    assert gpu_nodes.gpu_traces(str(tmp_path), "linux") == [str(tmp_path / "dev" / "nvidia0")]


@pytest.mark.parametrize(
    "trace", ["proc/driver/nvidia", "sys/module/nvidia", "dev/kfd", "sys/module/amdgpu", "dev/dxg"]
)
def test_any_driver_trace_leaves_the_question_to_torch(tmp_path: Path, trace: str) -> None:
    (tmp_path / trace).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / trace).touch()  # nvidia-modprobe may make /dev/nvidia0 only on first use: the module is enough
    assert not gpu_nodes.surely_no_gpu(str(tmp_path), "linux")


def test_elsewhere_than_linux_nothing_is_assumed(tmp_path: Path) -> None:
    assert gpu_nodes.gpu_traces(str(tmp_path), "darwin") is None
    assert not gpu_nodes.surely_no_gpu(str(tmp_path), "darwin")


def asked_torch(monkeypatch: pytest.MonkeyPatch, no_gpu: bool) -> list[str]:
    asked: list[str] = []

    def inspect(python: str, *_: object) -> object:
        asked.append(python)
        raise options.UsageError("asked torch")

    monkeypatch.setattr(options, "surely_no_gpu", lambda: no_gpu)
    monkeypatch.setattr(options, "inspect_python", inspect)
    monkeypatch.setattr(options, "park_early", lambda python: None)
    return asked


def test_without_a_driver_cuda_is_refused_before_torch_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = asked_torch(monkeypatch, no_gpu=True)
    assert main(["--store", str(tmp_path / "s.db"), "run", "probe", "--device", "cuda:0", "--cold"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "--device cuda:0: this host sees no GPU: no GPU driver is loaded" in said
    assert asked == [] and not (tmp_path / "s.db").exists()


def test_with_a_driver_torch_is_still_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = asked_torch(monkeypatch, no_gpu=False)
    assert main(["--store", str(tmp_path / "s.db"), "run", "probe", "--device", "cuda:0", "--cold"]) == 2
    assert len(asked) == 1


def test_python_is_always_asked_even_without_a_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--python must still be shown to be a Python with torch."""
    asked = asked_torch(monkeypatch, no_gpu=True)
    assert main(["--store", str(tmp_path / "s.db"), "run", "probe", "--python", "/usr/bin/python3", "--cold"]) == 2
    assert asked == ["/usr/bin/python3"]
