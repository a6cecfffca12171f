"""Datasheet peaks by device and dtype (dense TFLOP/s) and memory bandwidth (GB/s), with their sources.

Matched by substring of the device name; where nothing matches, shares are taken of the best measured.
"""

from __future__ import annotations

# NVIDIA H100/H200 SXM datasheet (dense, no sparsity): the H200 has the H100's arithmetic rates.
_HOPPER_SXM = {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9}

MATMUL_PEAKS_TFLOPS: list[tuple[str, dict[str, float], str]] = [
    ("H200", _HOPPER_SXM, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
    ("H100 80GB HBM3", _HOPPER_SXM, "NVIDIA H100 Tensor Core GPU datasheet (SXM)"),
    ("A100", {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0}, "NVIDIA A100 datasheet"),
    # fp32 only: its fp16 runs at 1/64 of that and it has no bf16; both are bounded by fp32 (limits.py)
    ("Tesla P40", {"fp32": 12.0}, "NVIDIA Tesla P40 datasheet: 12 TFLOPS single precision"),
    (
        "MI300X",
        {"fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9},
        "AMD Instinct MI300X data sheet",
    ),
]

BANDWIDTH_PEAKS_GBS: list[tuple[str, float, str]] = [
    ("H200", 4800.0, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e"),
    ("H100 80GB HBM3", 3350.0, "NVIDIA H100 SXM datasheet: 3.35 TB/s"),
    ("A100-SXM4-80GB", 2039.0, "NVIDIA A100 80GB SXM datasheet"),
    ("MI300X", 5300.0, "AMD Instinct MI300X data sheet: 5.3 TB/s"),
]


def matmul_peak(device_name: str, dtype: str) -> tuple[float | None, str | None]:
    for key, peaks, source in MATMUL_PEAKS_TFLOPS:
        if key in device_name and dtype in peaks:
            return peaks[dtype], source
    return None, None


def bandwidth_peak(device_name: str) -> tuple[float | None, str | None]:
    for key, peak, source in BANDWIDTH_PEAKS_GBS:
        if key in device_name:
            return peak, source
    return None, None
