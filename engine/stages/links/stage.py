"""The links between GPUs: topology as the driver reports it, peer-to-peer copies, and collectives
through torch.distributed with one process per GPU (gloo across processes on a host without GPUs)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import torch
from rigcheck.engine.events import Event, Facts, LogLine, Measurement, Progress, Status, Verdict
from rigcheck.engine.measure.busbw import bus_factor, size_label
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.registry import NOTHING_TO_LINK
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import by_profile
from rigcheck.engine.stages.common.figures import checked, device_identity, usable
from rigcheck.engine.stages.common.limits import bus_id, device_copy_limit
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION
from rigcheck.engine.stages.links.collectives import Failure, Plan, Ready, StepResult, StepSkipped, run_collectives
from rigcheck.engine.stages.links.p2p import p2p_pairs
from rigcheck.engine.stages.links.topology import read_topology, render

STAGE = "links"
MIB = 2**20
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
HOST_NOTE = "gloo across processes on the CPU: this measures the host, not GPU links"
# gloo between processes of one host moves bytes through its own memory: 38 s for 16 figures of loopback
# noise on a 2-CPU VM. It runs only when asked (tests reach the collectives' code through it).
NO_GPU_SKIP = (
    "no GPUs: nothing to link on one host (gloo between its own processes measures only its memory); "
    "links between hosts are measured by `rigcheck fleet`; RIGCHECK_LINKS_HOST=1 runs gloo here anyway"
)
ENV_PREFIXES = ("NCCL_", "RCCL_", "TORCH_NCCL_", "HSA_", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def gpus_asked(device: str) -> tuple[list[torch.device], tuple[Status, str] | None]:
    """The GPUs to link, or none with a SKIP (nothing to link) or FAIL (not there); [] and None: the host."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "cpu" or (device == "all" and count == 0):
        return [], None
    names = [f"cuda:{i}" for i in range(count)] if device == "all" else [d.strip() for d in device.split(",")]
    devices = [torch.device(n) for n in names]
    missing = [str(d) for d in devices if d.index is None or d.index >= count]
    if missing:
        return [], (Status.FAIL, f"{', '.join(missing)} asked for but torch sees {count} GPU(s)")
    if len(devices) < 2:
        return [], (
            Status.SKIP,
            f"one GPU ({devices[0]}): {NOTHING_TO_LINK}",
        )
    return devices, None


def option(context: StageContext, name: str, default: str) -> str:
    """A spec option, else RIGCHECK_LINKS_<NAME> from the environment (how tests reach the stage child)."""
    return str(context.spec.option(f"links_{name}") or os.environ.get(f"RIGCHECK_LINKS_{name.upper()}", default))


def topology(devices: list[torch.device], facts: dict[str, Any]) -> Iterator[Event]:
    labels = [str(d) for d in devices]
    found = read_topology([bus_id(d) for d in devices], bool(getattr(torch.version, "hip", None)))
    if found.get("source") is None:
        yield Verdict(STAGE, "topology", Status.SKIP, f"topology not read: {found.get('reason')}")
        return
    drawn = render(labels, found["cells"])
    facts["topology"] = found | {"labels": labels, "drawn": drawn}
    yield Facts(STAGE, dict(facts))
    yield LogLine(STAGE, f"topology ({found['source']}):\n{drawn}")
    links = sorted(
        {f"{labels[i]}-{labels[j]} {c}" for i, row in enumerate(found["cells"]) for j, c in enumerate(row) if i < j}
    )
    pcie = "; ".join(
        _pcie_words(label, gpu) for label, gpu in zip(labels, found["gpus"], strict=True) if gpu.get("pcie")
    )
    yield Verdict(
        STAGE,
        "topology",
        Status.PASS,
        f"{', '.join(links)} (from {found['source']})" + (f"; PCIe {pcie}" if pcie else ""),
        {"cells": found["cells"], "labels": labels},
    )


def _pcie_words(label: str, gpu: dict[str, Any]) -> str:
    p = gpu["pcie"]
    idle = " (idle links step down)" if p.get("gen") != p.get("max_gen") else ""
    return f"{label} gen{p.get('gen')} x{p.get('width')} of gen{p.get('max_gen')} x{p.get('max_width')}{idle}"


def peer_copies(devices: list[torch.device], profile: str, facts: dict[str, Any]) -> Iterator[Event]:
    numel = by_profile(profile, 256 * MIB, 2**30, 2**30) // 4
    labels = [str(d) for d in devices]
    one_way: dict[tuple[str, str], str] = {}
    both: list[str] = []
    failures = 0
    for kind, payload in p2p_pairs(devices, numel, by_profile(profile, 10, 20, 30)):
        if kind == "no-peer":
            one_way[(str(payload[0]), str(payload[1]))] = "no P2P"
            yield LogLine(STAGE, f"{payload[0]} cannot access {payload[1]} as a peer: no P2P copy measured")
        elif kind == "wrong":
            failures += 1
            yield Verdict(
                STAGE,
                f"p2p {payload[0]}",
                Status.FAIL,
                f"p2p copy {payload[0]}: {payload[1]} wrong elements after the copy",
            )
        else:
            yield from payload
            figure = payload[0]
            text = f"{figure.value:.1f}" if usable(figure) else "broken"
            if figure.params["direction"] == "one-way":
                one_way[(figure.params["src"], figure.params["dst"])] = text
            else:
                both.append(f"{figure.params['src']}<->{figure.params['dst']} {text} GB/s")
    cells = [[("-" if a == b else one_way.get((a, b), "?")) for b in labels] for a in labels]
    drawn = render(labels, cells)
    facts["p2p"] = {"labels": labels, "one_way_gbs": cells, "both_ways": both, "bytes": numel * 4, "drawn": drawn}
    yield Facts(STAGE, dict(facts))
    yield LogLine(STAGE, f"p2p one way, GB/s (row = source), {size_label(numel * 4)}:\n{drawn}")
    measured = [c for row in cells for c in row if c not in ("-", "no P2P", "?")]
    if not measured:
        yield Verdict(STAGE, "p2p", Status.SKIP, "no pair of GPUs has peer access: no P2P copy measured")
    elif not failures:
        yield Verdict(
            STAGE,
            "p2p",
            Status.PASS,
            f"p2p copies of {size_label(numel * 4)} arrived intact; one way GB/s (row = source):\n{drawn}"
            + (f"\nboth ways at once: {'; '.join(both)}" if both else ""),
            {"one_way_gbs": cells, "both_ways": both},
        )


def collective_sizes(profile: str, host: bool) -> list[tuple[int, int]]:
    """(bytes, timed calls): 1 MiB to 1 GiB on GPUs (quick: to 256 MiB); the host stops sooner."""
    if host:
        mib = by_profile(profile, [1, 4], [1, 4, 16, 64], [1, 4, 16, 64, 256])
        return [(m * MIB, 5) for m in mib]
    mib = by_profile(profile, [1, 16, 256], [1, 4, 16, 64, 256, 1024], [1, 4, 16, 64, 256, 1024])
    return [(m * MIB, 50 if m <= 16 else 30 if m <= 64 else 20) for m in mib]


def step_events(result: StepResult, first: torch.device | None, common: dict[str, Any]) -> Iterator[Event]:
    stats = TimingStats(result.times, (), "events" if result.timer == "events" else "perf_counter", result.timer_check)
    device = str(first) if first is not None else "cpu"
    params = {
        "collective": result.collective,
        "bytes": result.size_bytes,
        "ranks": result.ranks,
        "algbw": result.algbw_gbs,
        "bus_factor": bus_factor(result.collective, result.ranks),
        "wrong": result.wrong,
        "seconds": result.seconds,
        "benchmark_version": BENCHMARK_VERSION,
        **common,
        **(device_identity(first) if first is not None else {}),
    }
    spread = result.busbw_gbs * stats.spread
    figure = Measurement(
        STAGE,
        f"{result.label} busbw",
        result.busbw_gbs,
        "GB/s",
        spread,
        len(result.times),
        device,
        params,
        t_start=result.t_start,
    )
    limit = device_copy_limit(first) if first is not None else None
    yield from checked(figure, stats, limit, result.timer_reason)
    for rank, bad in sorted(result.wrong_by_rank.items()):
        first_bad = bad["first_wrong"] or {}
        yield Verdict(
            STAGE,
            f"{result.label} rank {rank}",
            Status.FAIL,
            f"{result.label}: {bad['wrong']} wrong element(s) on rank {rank} (first at {first_bad.get('index')}: "
            f"got {first_bad.get('got')}, expected {first_bad.get('expected')})",
            {"wrong": bad["wrong"], "rank": rank, **first_bad},
            device=device,
        )


def collectives(context: StageContext, devices: list[torch.device], facts: dict[str, Any]) -> Iterator[Event]:
    host = not devices
    names = [str(d) for d in devices] or ["cpu"] * int(option(context, "ranks", "2"))
    plan = Plan(
        "gloo" if host else "nccl",
        tuple(names),
        tuple(collective_sizes(context.spec.profile, host)),
        COLLECTIVES,
        warmup=2 if host else 5,
        step_timeout=float(option(context, "step_timeout", "60")),
        fault=option(context, "fault", ""),
    )
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    common: dict[str, Any] = {"backend": plan.backend, "devices": names, "env": env}
    last: dict[str, StepResult] = {}
    results: list[StepResult] = []
    total = len(plan.sizes) * len(plan.collectives)
    done = 0
    yield Progress(STAGE, 0, total, f"starting {plan.world} {plan.backend} ranks")
    for outcome in run_collectives(plan, lambda: context.cancelled):
        if isinstance(outcome, Ready):
            common |= {"backend": outcome.backend, "nccl_version": outcome.nccl, "torch": outcome.torch}
            version = f", NCCL {outcome.nccl}" if outcome.nccl else ""
            yield LogLine(STAGE, f"{plan.world} ranks joined ({outcome.backend}{version}); pids {outcome.pids}")
        elif isinstance(outcome, StepSkipped):
            done += 1
            yield LogLine(STAGE, f"{outcome.collective}: {outcome.reason}")
            yield Verdict(STAGE, outcome.collective, Status.SKIP, outcome.reason)
        elif isinstance(outcome, StepResult):
            done += 1
            yield Progress(STAGE, done, total, outcome.label)
            yield from step_events(outcome, devices[0] if devices else None, common)
            last[outcome.collective] = outcome
            results.append(outcome)
        elif isinstance(outcome, Failure):
            where = str(devices[0]) if devices else "cpu"
            yield Verdict(
                STAGE, "collectives", Status(outcome.status), outcome.explanation, outcome.numbers, device=where
            )
            last.clear()  # no summary from a run that did not finish
            break
    table = {f"{r.collective} {size_label(r.size_bytes)}": round(r.busbw_gbs, 2) for r in results}
    facts["collectives"] = {"busbw_gbs": table, "ranks": plan.world} | common
    yield Facts(STAGE, dict(facts))
    for name, result in last.items():
        where = HOST_NOTE if host else f"{plan.backend} {common.get('nccl_version')} on {', '.join(names)}"
        status = Status.PASS if result.wrong == 0 else Status.FAIL
        yield Verdict(
            STAGE,
            name,
            status,
            f"{result.label} across {result.ranks} ranks: busbw {result.busbw_gbs:.1f} GB/s, algbw "
            f"{result.algbw_gbs:.1f} GB/s, #wrong {result.wrong} ({where})",
            {"busbw": result.busbw_gbs, "algbw": result.algbw_gbs, "bytes": result.size_bytes, "wrong": result.wrong},
            device=str(devices[0]) if devices else "cpu",
        )


def run(context: StageContext) -> Iterator[Event]:
    facts: dict[str, Any] = {}  # the store keeps a stage's last Facts: each one carries everything so far
    devices, nothing = gpus_asked(context.spec.device)
    if not devices and not nothing and option(context, "host", "") != "1":
        nothing = (Status.SKIP, NO_GPU_SKIP)
    if nothing:
        yield Verdict(STAGE, "links", nothing[0], nothing[1], device=context.spec.device)
        return
    if devices:
        yield Progress(STAGE, 0, 3, "topology")
        yield from topology(devices, facts)
        yield Progress(STAGE, 1, 3, "peer-to-peer copies")
        yield from peer_copies(devices, context.spec.profile, facts)
        torch.cuda.empty_cache()
    else:
        yield Verdict(STAGE, "topology", Status.SKIP, "no GPUs: no topology or peer copies; " + HOST_NOTE, device="cpu")
    yield from collectives(context, devices, facts)
