"""The stage child's entry point: run stages and send their events up a pipe, one synchronous write each.

Started by the runner, possibly under another interpreter, in one of two ways:
- cold, `python -m rigcheck.engine.run.child FD ORDER_JSON`: one stage, with fds 1 and 2 already
  pointing at the stage's log file, then exit;
- warm, `python -m rigcheck.engine.run.child --warm ORDERS_FD FD [answer|ready]`: stage orders arrive on ORDERS_FD one
  after another; each stage's output goes to the log its order names, and what a stage changed in the
  process is put back before the next (warm_state). End of ORDERS_FD ends the child.
Standard library only at import time; the stages themselves import numpy and torch.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import signal
import sys
import threading
import traceback
from multiprocessing.connection import Connection

from rigcheck.engine.events import Fingerprint, StageFinished, StageStarted, Status, Verdict, worst
from rigcheck.engine.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from rigcheck.engine.registry import STAGES
from rigcheck.engine.run.codec import CodecError
from rigcheck.engine.run.event_pipe import send_event
from rigcheck.engine.run.order import READY, StageOrder
from rigcheck.engine.run.torch_question import answer_here
from rigcheck.engine.run.warm_state import FreshState
from rigcheck.engine.stage import SHARED_DIR_ENV, StageContext, StageFunction, StageSpec
from rigcheck.engine.stages.common.parent_death import die_with_parent


def load_stage(target: str) -> StageFunction:
    module_name, _, function_name = target.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def environment_fingerprint(stage: str) -> Fingerprint:
    import torch
    from rigcheck.engine.facts.driver import driver_facts
    from rigcheck.engine.facts.fingerprint import digest, fingerprint_basis

    basis = fingerprint_basis(torch, driver_facts(torch).get("version"))
    return Fingerprint(stage, digest(basis), basis)


def run_stage(conn: Connection, spec: StageSpec, target: str, fingerprint: bool) -> None:
    context = StageContext(spec)

    def on_term(signum: int, frame: object) -> None:
        context.cancel_flag[0] = True

    signal.signal(signal.SIGTERM, on_term)
    send_event(conn, StageStarted(spec.stage, spec.device, os.getpid(), sys.executable))
    statuses: list[Status] = []
    try:
        if fingerprint:
            send_event(conn, environment_fingerprint(spec.stage))
        for event in load_stage(target)(context):
            if isinstance(event, Verdict):
                statuses.append(event.status)
            send_event(conn, event)
            if context.cancelled:
                break
    except Exception as error:
        traceback.print_exc()
        last = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{os.path.basename(last.filename)}:{last.lineno}"
        verdict = Verdict(
            spec.stage,
            "stage",
            Status.FAIL,
            f"the stage raised {type(error).__name__}: {error} (at {where})",
            {"exception": type(error).__name__, "message": str(error), "where": where},
            device=spec.device,
        )
        if out_of_memory_error(error):  # someone else's memory is never a FAIL (issue 41)
            verdict = out_of_memory(spec, error, where) or verdict
        statuses.append(verdict.status)
        send_event(conn, verdict)
    if context.cancelled:
        cancelled = Verdict(spec.stage, "stage", Status.SKIP, "cancelled before it finished")
        statuses.append(cancelled.status)
        send_event(conn, cancelled)
    send_event(conn, StageFinished(spec.stage, worst(statuses) or Status.SKIP, exit_code=0))


def out_of_memory_error(error: BaseException) -> bool:
    """torch's OutOfMemoryError, or a library's allocation failure that says so (cuBLAS's handle, an older torch)."""
    text = str(error)
    return type(error).__name__ == "OutOfMemoryError" or "out of memory" in text or "ALLOC_FAILED" in text


def out_of_memory(spec: StageSpec, error: BaseException, where: str) -> Verdict | None:
    """A stage that ran out of GPU memory: SKIP naming the holder where someone else holds it, else its FAIL
    (a defect). Loaded by name, as the stages are: it reads torch's and NVML's memory in this child."""
    try:
        oom = importlib.import_module("rigcheck.engine.stages.common.oom")
        device = spec.device if spec.device.startswith("cuda") else None
        return oom.oom_verdict(spec.stage, "stage", device, f"the {spec.stage} stage (at {where})", error)
    except Exception:
        traceback.print_exc()
        return None


def output_to(log: str) -> None:
    """Point fds 1 and 2 at this stage's log (owner only, appended), as a cold child's are from its start."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def warm_up() -> None:
    """Import torch before a stage that uses it, so its switches are read as a fresh process has them."""
    try:
        import torch  # noqa: F401
    except Exception as error:  # a --python without torch: the stages say so themselves
        print(f"rigcheck child {os.getpid()}: torch did not import ({type(error).__name__}: {error})", flush=True)


def preload() -> None:
    """What a stage's first steps would import: torch, and torch._dynamo, which torch.optim's first optimizer
    imports (4-5 s on its own); done while the child waits, ahead of its stage."""
    warm_up()
    try:
        import torch._dynamo  # noqa: F401
    except Exception as error:  # an older or partial torch: the stage imports what it can itself
        print(f"rigcheck child {os.getpid()}: torch._dynamo did not import ({type(error).__name__})", flush=True)


def preload_beside() -> threading.Thread:
    """torch._dynamo (preload's second import) in a thread while the first stages run: a stage that measures
    throughput, or one this registry does not know, waits for it (`measures_throughput`)."""
    thread = threading.Thread(target=_import_dynamo, name="rigcheck-preload", daemon=True)
    thread.start()
    return thread


def _import_dynamo() -> None:
    with contextlib.suppress(Exception):  # the stage that needs it imports it itself and says what is wrong
        import torch._dynamo  # noqa: F401


def measures_throughput(stage: str) -> bool:
    info = STAGES.get(stage)
    return info is None or info.throughput


def serve_orders(orders: Connection, conn: Connection, first: str = "") -> int:
    """Run each order that arrives, in this one process, until the runner closes the orders pipe.

    `first` "answer": import torch at once and send the preflight's answer about this interpreter's torch, as
    raw bytes, before any event (the child was started ahead of its run, beside the preflight). "ready": import
    what a stage would (preload), then send READY, before any event (started ahead of a stage of its own)."""
    fresh = FreshState()
    preloading: threading.Thread | None = None
    if first == "answer":
        warm_up()
        fresh.take_torch()
        conn.send_bytes(answer_here().encode())
        preloading = preload_beside() if "torch" in sys.modules else None  # while the run starts and probes
    elif first == "ready":
        preload()
        fresh.take_torch()
        conn.send_bytes(READY)
    served = 0
    while True:
        try:
            order = StageOrder.from_json(orders.recv_bytes().decode())
        except (EOFError, OSError):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_OK)  # nothing left to run: skip tearing torch down, the kernel frees it all
        except (CodecError, UnicodeDecodeError) as error:
            print(f"rigcheck child: {error}", file=sys.stderr, flush=True)
            return EXIT_USAGE
        if order.log:
            output_to(order.log)
            os.chdir(os.path.dirname(order.log))  # the run's folder, as a cold child's
        if order.shared:
            os.environ[SHARED_DIR_ENV] = order.shared  # put back (removed) with the rest after the stage
        if order.fingerprint and "torch" not in sys.modules:
            # Every real stage sends the fingerprint, so torch's switches are read here, before any stage
            # could change them; a stage sent without it (a test's) must leave torch's switches alone.
            warm_up()
        fresh.take_torch()
        if preloading is not None and measures_throughput(order.spec.stage):
            preloading.join()  # no import of ours beside a figure
            preloading = None
        served += 1
        print(
            f"rigcheck child {os.getpid()} (warm, stage {served} here): {order.spec} via {sys.executable}", flush=True
        )
        try:
            run_stage(conn, order.spec, order.target, order.fingerprint)
        except (BrokenPipeError, EOFError):
            return EXIT_ERROR
        finally:
            sys.stdout.flush()
        fresh.take_torch()  # torch's fresh switches, where the first stage was the one to import it
        changed = fresh.restore()
        if changed:
            print(f"rigcheck child: put back what the stage left changed: {sorted(changed)}", flush=True)


def main(argv: list[str]) -> int:
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the runner asks for stacks on timeout
    die_with_parent()
    if len(argv) in (3, 4) and argv[0] == "--warm" and argv[1].isdigit() and argv[2].isdigit():
        orders = Connection(int(argv[1]), writable=False)
        first = argv[3] if len(argv) == 4 and argv[3] in ("answer", "ready") else ""
        return serve_orders(orders, Connection(int(argv[2]), readable=False), first)
    if len(argv) != 2 or not argv[0].isdigit():
        print(
            "rigcheck child: usage: python -m rigcheck.engine.run.child FD ORDER_JSON"
            " | --warm ORDERS_FD FD [answer|ready]",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        order = StageOrder.from_json(argv[1])
    except CodecError as error:
        print(f"rigcheck child: {error}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    spec = order.spec
    print(f"rigcheck child {os.getpid()}: {spec} via {sys.executable}", flush=True)
    conn = Connection(int(argv[0]), readable=False)
    try:
        run_stage(conn, spec, order.target, order.fingerprint)
    except (BrokenPipeError, EOFError):
        return EXIT_ERROR  # the parent went away; nobody is left to tell
    finally:
        sys.stdout.flush()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
