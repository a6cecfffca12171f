"""torchrun as `rigcheck fleet` starts it (`python -P -m rigcheck.engine.fleet.launcher ARGS`): a signal that stops it
ends in one line and exit 128+N, an agent that failed in one line and exit 1, never torchrun's traceback."""

from __future__ import annotations

import signal
import sys

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # what `rigcheck fleet` passes on to torchrun


class Stopped(Exception):
    """A stop signal that came before torchrun set its own handlers (it sets them once its worker starts)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def ended(failed: Exception) -> str:
    """How torchrun's worker ended: 'ended with exit code 3', or 'was killed by SIGKILL'."""
    try:
        code = int(failed.get_first_failure()[1].exitcode)  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError, ValueError):
        return "failed"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"ended with exit code {code}"


def main(argv: list[str]) -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stopped)
    try:
        from torch.distributed.elastic.multiprocessing.api import SignalException
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.run import main as torchrun

        try:
            torchrun(argv)
        except SignalException as stop:  # torchrun stopped its worker (the agent), which said what it kept
            raise Stopped(int(stop.sigval)) from None
        except ChildFailedError as failed:  # the agent said why; `rigcheck fleet` exits with its code
            print(f"rigcheck fleet: this host's agent {ended(failed)}", file=sys.stderr, flush=True)
            return 1  # torchrun's own exit code for a failed worker
    except (Stopped, KeyboardInterrupt) as stop:
        for signum in STOPS:  # a second signal while this says the one line: no traceback either
            signal.signal(signum, signal.SIG_IGN)
        number = stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT)
        print(f"rigcheck fleet: stopped by {signal.Signals(number).name}", file=sys.stderr, flush=True)
        return 128 + number
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
