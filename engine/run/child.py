"""The stage child's entry point: run one stage and send its events up a pipe, one synchronous write each.

Started as `python -m rigcheck.engine.run.child FD ORDER_JSON` by the runner, possibly under
another interpreter, with fds 1 and 2 already pointing at the stage's log file. Standard library
only at import time; the stage itself imports numpy and torch.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection

from rigcheck.engine.events import Fingerprint, StageFinished, StageStarted, Status, Verdict, worst
from rigcheck.engine.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from rigcheck.engine.run.codec import CodecError
from rigcheck.engine.run.order import StageOrder
from rigcheck.engine.stage import StageContext, StageFunction, StageSpec
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
    conn.send(StageStarted(spec.stage, spec.device, os.getpid(), sys.executable))
    statuses: list[Status] = []
    try:
        if fingerprint:
            conn.send(environment_fingerprint(spec.stage))
        for event in load_stage(target)(context):
            if isinstance(event, Verdict):
                statuses.append(event.status)
            conn.send(event)
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
        statuses.append(verdict.status)
        conn.send(verdict)
    if context.cancelled:
        cancelled = Verdict(spec.stage, "stage", Status.SKIP, "cancelled before it finished")
        statuses.append(cancelled.status)
        conn.send(cancelled)
    conn.send(StageFinished(spec.stage, worst(statuses) or Status.SKIP, exit_code=0))


def main(argv: list[str]) -> int:
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the runner asks for stacks on timeout
    die_with_parent()
    if len(argv) != 2 or not argv[0].isdigit():
        print("rigcheck child: usage: python -m rigcheck.engine.run.child FD ORDER_JSON", file=sys.stderr)
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
