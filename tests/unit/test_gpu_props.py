"""A present GPU's properties read without torch: amdgpu's KFD topology (a fake tree: an MI300X node beside a CPU
node) gives its gfx target, CUs, clocks and bus width, from which its peaks follow; a tree with no GPU node, or
none at all, gives nothing."""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.facts.gpu_props import amd_props
from rigcheck.engine.hw.kfd import gfx_target
from rigcheck.engine.measure.arch_peaks import Peak, compute_peak, memory_peak


def node(root: Path, index: int, properties: dict[str, int], memory: dict[str, int] | None = None) -> None:
    folder = root / str(index)
    (folder / "mem_banks" / "0").mkdir(parents=True)
    (folder / "properties").write_text("".join(f"{k} {v}\n" for k, v in properties.items()))
    (folder / "mem_banks" / "0" / "properties").write_text("".join(f"{k} {v}\n" for k, v in (memory or {}).items()))


def test_an_mi300x_node_gives_its_peaks_and_a_cpu_node_is_skipped(tmp_path: Path) -> None:
    node(tmp_path, 0, {"cpu_cores_count": 96, "simd_count": 0})
    gpu = {"simd_count": 1216, "simd_per_cu": 4, "max_engine_clk_fcompute": 2100, "gfx_target_version": 90402}
    node(tmp_path, 1, gpu | {"location_id": 0x1B00, "domain": 0}, {"width": 8192, "mem_clk_max": 1300})
    (bus, props), *rest = amd_props(tmp_path, {"0000:1b:00.0": "AMD Instinct MI300X"}).items()
    assert rest == [] and bus == "0000:1b:00.0" and props.name == "AMD Instinct MI300X"
    assert (props.arch, props.units, props.sm_clock_max_mhz) == ("gfx942", 304, 2100)
    bf16, memory = compute_peak(props, "bf16"), memory_peak(props)
    assert isinstance(bf16, Peak) and round(bf16.value, 1) == 1307.4
    assert isinstance(memory, Peak) and abs(memory.value - 5300) / 5300 < 0.03


def test_gfx_targets_and_an_absent_tree() -> None:
    assert [gfx_target(v) for v in (90402, 90010, 110501, 110000, 0)] == ["gfx942", "gfx90a", "gfx1151", "gfx1100", ""]
    assert amd_props(Path("/nonexistent/kfd")) == {}
