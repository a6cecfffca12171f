"""The stream's wire format: one JSON object a line, for the hello, each event (with its store sequence number)
and each telemetry sample; and telemetry samples read back from their to_dict form."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from rigcheck.engine.events import Event, event_from_dict
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample


def encode_hello(seq: int, notes: list[str]) -> bytes:
    return json.dumps({"ok": True, "seq": seq, "notes": notes}).encode() + b"\n"


def encode_event(seq: int, payload: str) -> bytes:
    """`payload` is the event's JSON as the store holds it, sent as it is."""
    return b'{"seq":%d,"event":%s}\n' % (seq, payload.encode())


def encode_sample(sample: Sample) -> bytes:
    return json.dumps({"sample": sample.to_dict()}, separators=(",", ":")).encode() + b"\n"


def _build(kind: type[Any], data: dict[str, Any]) -> Any:
    """A telemetry dataclass from its to_dict form; lists back to tuples, unknown keys left out."""
    known = {f.name for f in fields(kind)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
    return kind(**values)


def sample_from_dict(data: dict[str, Any]) -> Sample:
    host = dict(data["host"])
    host["top_others"] = [_build(ProcessUse, p) for p in host.get("top_others", [])]
    if host.get("others_now") is not None:
        host["others_now"] = [_build(ProcessUse, p) for p in host["others_now"]]
    gpus = []
    for gpu in data.get("gpus", []):
        gpu = dict(gpu)
        gpu["processes"] = [_build(ProcessUse, p) for p in gpu.get("processes", [])]
        gpus.append(_build(GpuSample, gpu))
    return Sample(float(data["t"]), _build(HostSample, host), tuple(gpus))


def parse_line(line: bytes) -> tuple[int, Event | None] | Sample | None:
    """One stream line: (sequence number, event) or a telemetry sample; None for anything else."""
    data = json.loads(line)
    if "seq" in data and "event" in data:
        return int(data["seq"]), event_from_dict(data["event"])
    if "sample" in data:
        return sample_from_dict(data["sample"])
    return None
