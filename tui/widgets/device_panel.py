"""The Device panel: every GPU and the CPU from Probe, the environment fingerprint and Probe's warnings."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static


def _gib(value: Any) -> str:
    return f"{value / 2**30:.1f} GiB" if isinstance(value, int | float) else "n/a"


def describe_facts(facts: dict[str, Any] | None, fingerprint: str | None, warnings: list[str]) -> str:
    if not facts:
        return "No probe yet: press 1 to run Probe."
    lines = []
    torch = facts.get("torch", {})
    build = f"torch {torch.get('torch')} ({torch.get('build')})"
    if torch.get("cuda") or torch.get("hip"):
        build += f", {'CUDA ' + str(torch.get('cuda')) if torch.get('cuda') else 'HIP ' + str(torch.get('hip'))}"
    if torch.get("dnn_version_text"):
        build += f", {torch.get('dnn_library')} {torch.get('dnn_version_text')}"
    driver = (facts.get("driver") or {}).get("version")
    lines.append(build + (f", driver {driver}" if driver else ""))
    for device in facts.get("devices", []):
        memory = _gib(device.get("memory_pool_bytes"))
        lines.append(
            f"cuda:{device['index']} {device['name']} {device['arch']}, {device['multiprocessors']} "
            f"{device['multiprocessor_kind']}, {memory} ({device.get('memory_pool_source')}), "
            f"matrix: {'/'.join(device.get('matrix_dtypes', [])) or 'none'}"
        )
        if device.get("memory_note"):
            lines.append(f"  {device['memory_note']}")
    if facts.get("no_gpu_reason"):
        lines.append(f"no GPU: {facts['no_gpu_reason']}")
    cpu = facts.get("cpu", {})
    lines.append(
        f"CPU {cpu.get('model')}: {cpu.get('usable_cpus')}/{cpu.get('logical_cpus')} CPUs, "
        f"governor {cpu.get('governor')}, BLAS {torch.get('blas_info')}"
    )
    for blas in facts.get("blas", []):
        if blas.get("architecture"):
            lines.append(f"  {blas.get('internal_api')} {blas.get('version')}: {blas.get('architecture')} kernel")
    interpreter = facts.get("interpreter", {})
    lines.append(f"python {interpreter.get('version')} at {interpreter.get('executable')}")
    env = facts.get("environment") or {}
    if env:
        lines.append("env: " + ", ".join(f"{k}={v}" for k, v in env.items()))
    if fingerprint:
        lines.append(f"fingerprint {fingerprint}")
    lines.extend(f"warning: {w}" for w in warnings)
    return "\n".join(lines)


def describe_links(links: dict[str, Any] | None) -> str:
    """The links stage's matrices as the driver and the copies found them: topology, then peer copies."""
    if not links:
        return ""
    parts = []
    for key, title in (("topology", "links between GPUs"), ("p2p", "peer-to-peer copies, GB/s one way")):
        drawn = (links.get(key) or {}).get("drawn")
        if drawn:
            parts.append(f"{title}:\n{drawn}")
    return "\n".join(parts)


class DevicePanel(VerticalScroll):
    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(Text(describe_facts(None, None, [])), id="device-text")

    def show(
        self,
        facts: dict[str, Any] | None,
        fingerprint: str | None,
        warnings: list[str],
        links: dict[str, Any] | None = None,
    ) -> None:
        text = describe_facts(facts, fingerprint, warnings)
        drawn = describe_links(links)
        self.query_one("#device-text", Static).update(Text(text + ("\n" + drawn if drawn else "")))
