"""`rigcheck monitor`: headless live telemetry for every GPU and the host, as text, JSON lines or a Prometheus file."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rigcheck.engine.exits import EXIT_ERROR, EXIT_INTERRUPTED
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.report.atomic_write import existing_target, write_atomic
from rigcheck.engine.report.prom_telemetry import sample_to_prom
from rigcheck.engine.run.given import GivenError, user_path
from rigcheck.engine.run.preflight import UsageError, check_folder_takes_files
from rigcheck.engine.store.errors import STORE_ENV
from rigcheck.engine.telemetry.sample import Sample, na
from rigcheck.engine.telemetry.sampler import Sampler
from rigcheck.engine.telemetry.sources import note_in_words

PROM_FILE = "rigcheck.prom"
NAMED_FROM_CPUS = 0.5  # others' load from which the first shown sample waits until they are named
NAMING_WAIT_S = 2.6  # the host reader's process scan runs every 2 s: its second scan names them


def textfile_path(folder: str) -> Path:
    """DIR/rigcheck.prom, once DIR is known to be a folder that takes files and the file, if there, a regular
    file of this user's: checked before sampling starts."""
    try:
        target = user_path(folder, "--prom-textfile") / PROM_FILE  # `~nouser`: one line, not RuntimeError
    except GivenError as error:
        raise UsageError(str(error)) from None
    shown = folder if len(folder) <= 80 else f"{folder[:40]}...({len(folder)} characters)"
    try:
        check_folder_takes_files("--prom-textfile", shown, target)
        existing_target(target)
    except UsageError:
        raise
    except OSError as error:  # RefusedTarget: a link, a FIFO, another user's file; a name too long
        said = str(target) if len(str(target)) <= 120 else "the file"
        raise UsageError(f"--prom-textfile {shown}: {said} {error.strerror or error}") from None
    return target


def store_given(store_arg: str | None) -> None:
    """The store `--store` or RIGCHECK_STORE names for the health figures, refused in one line where it cannot
    name a file (`-`, `~nouser`); a store that is simply not there is fine (the telemetry still goes out)."""
    named = store_arg if store_arg is not None else os.environ.get(STORE_ENV)
    source = "--store" if store_arg is not None else STORE_ENV
    if named is None:
        return
    if named == "-":
        raise UsageError(f"{source} -: a store is a file rigcheck reads back; `-` names none: give a file name")
    try:
        user_path(named, source)
    except GivenError as error:
        raise UsageError(str(error)) from None


def format_line(sample: Sample) -> str:
    host = sample.host
    parts = [
        f"host load {na(host.load1, '{:.2f}')} | busy {host.busy_cpus:.1f}/{host.cpus} CPUs "
        f"(others {host.others_cpus:.1f}, rigcheck {host.own_cpus:.1f}) | CPU {na(host.cpu_mhz)}"
        f"{f'/{host.cpu_max_mhz:.0f}' if host.cpu_max_mhz else ''} MHz temp {na(host.temperature_c, unit=' C')} "
        f"pkg {na(host.package_power_w, '{:.1f}', ' W')}"
    ]
    busiest = host.others_now or host.top_others
    if busiest:
        parts.append("busiest others: " + ", ".join(f"{p.name} (pid {p.pid}) {p.cpus or 0:.1f}" for p in busiest[:3]))
    for gpu in sample.gpus:
        memory = (
            "N/A"
            if gpu.memory_used is None or not gpu.memory_total
            else f"{gpu.memory_used / 2**30:.1f}/{gpu.memory_total / 2**30:.1f} GiB"
        )
        throttle = f" [{', '.join(gpu.throttle)}]" if gpu.throttle else ""
        parts.append(
            f"gpu{gpu.index} {gpu.name}: {na(gpu.sm_clock_mhz, unit=' MHz')} "
            f"{na(gpu.temperature_c, unit=' C')} "
            f"{na(gpu.power_w, '{:.0f}')}/{na(gpu.power_limit_w, unit=' W')} "
            f"util {na(gpu.utilization_pct, unit='%')} mem {memory}{throttle}"
        )
    return " | ".join(parts)


def naming_pending(sample: Sample, since_start_s: float) -> bool:
    """Other processes keep CPUs busy, but the process scan (every 2 s, the first only priming) has not named
    them yet: the first shown sample waits for it, up to NAMING_WAIT_S, rather than say `top_others: []`."""
    host = sample.host
    return host.others_cpus >= NAMED_FROM_CPUS and not host.top_others and since_start_s < NAMING_WAIT_S


def monitor(
    interval: float,
    count: int | None,
    as_json: bool,
    sampler: Sampler | None = None,
    prom_file: Path | None = None,
    health: Callable[[], dict[str, Any] | None] | None = None,  # the newest health run, for the textfile
) -> int:
    """Print samples until `count` or Ctrl-C (exit 130); with `prom_file`, replace that file with each
    sample in Prometheus text instead (a write that fails ends the monitor: one line, exit 4).

    The first sample only primes the counters: it covers rigcheck's own start-up before its CPU time
    could be told apart (the first reading of a process has nothing to subtract), so it would show our
    own start-up as other processes' load. It is read and dropped."""
    sampler = sampler or Sampler(interval=interval, keep_seconds=max(60.0, interval * 10))
    if not as_json:
        said = list(dict.fromkeys(map(note_in_words, sampler.notes)))
        if said and not getattr(sampler, "gpus", None):
            print(f"# no GPU telemetry: {'; '.join(said)}", file=sys.stderr)  # one line, in words
        else:
            for note in said:
                print(f"# {note}", file=sys.stderr)
    done = threading.Event()
    seen = -1  # the priming sample
    failed: list[OSError] = []
    hostname = socket.gethostname()
    cpu_model = "" if prom_file is None else cpu_facts()["model"]
    cpu_model = "" if cpu_model == "unknown" else cpu_model

    def emit(sample: Sample) -> None:
        if prom_file is None:
            print(json.dumps(sample.to_dict()) if as_json else format_line(sample), flush=True)
            return
        try:
            write_atomic(prom_file, sample_to_prom(sample, hostname, cpu_model, health() if health else None))
        except OSError as error:  # the folder went away, or the disk is full
            failed.append(error)
            done.set()

    first_t: list[float] = []

    def show(sample: Sample) -> None:
        nonlocal seen
        first_t[:] = first_t or [sample.t]
        if seen == 0 and naming_pending(sample, sample.t - first_t[0]):
            return  # still priming: the processes keeping the host busy are not named yet
        seen += 1
        if done.is_set() or seen == 0:
            return
        try:
            emit(sample)
        except BrokenPipeError:  # `rigcheck monitor | head`: the reader has gone, which ends the monitor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            done.set()
        if count is not None and seen >= count:
            done.set()

    sampler.add_listener(show)
    try:  # the start inside: a Ctrl-C the moment it starts must still stop the sampler's thread
        sampler.start()
        done.wait()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        sampler.stop()
    if failed:
        why = failed[0].strerror or failed[0]
        print(f"rigcheck: --prom-textfile: cannot write {prom_file} ({why})", file=sys.stderr)
        return EXIT_ERROR
    return 0
