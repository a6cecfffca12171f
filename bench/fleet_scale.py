"""The fleet at scale, simulated on one machine with the real code: a real TCPStore, rank 0's real collector and
N agents each on the real FleetChannel, replaying a recorded agent's events at their recorded pace.

    PYTHONPATH=... python bench/fleet_scale.py 64 256 1024 [--lost-after 10] [--json out.json]

The store's server and rank 0's collector live in this process, measured alone (its CPU time, RSS); the agents
live in a few worker processes (this script with --worker), each holding many channels, one TCP connection
each, with one thread that sends every agent's events and heartbeats when they are due. A few agents stop
mid-run (no more heartbeat, no end) to time how long rank 0 takes to name them lost. At the end rank 0 writes
the fleet verdicts (cross-host comparison) and the fleet summary, as `rigcheck fleet` does, timed.

Figures per N: rank 0's CPU share (process CPU seconds over wall seconds while the agents run) and peak RSS;
event-to-row latency (from the agent stamping the event to its row in rank 0's SQLite store: p50, p95, max);
the store's key count (peak, end); the time to name each stopped agent lost (minus --lost-after, the floor);
and the end-of-run comparison and summary time.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

STREAM = Path(__file__).resolve().parent / "data" / "fleet_stream_cpu_quick.json"
EXCEPT = ("RunStarted", "RunFinished", "Progress")  # not stored, or coalesced by the channel
KEY = b"scale-bench-key-" * 4
RUN = "scale"
PREFIX = f"rigcheck/{RUN}/"
BEAT, FLUSH = -1, -2  # an agent's heartbeat, and the end of its held burst's window, in the workers' schedule


def heartbeat_interval(lost_after: float) -> float:
    try:
        from rigcheck.engine.fleet.channel import heartbeat_interval as interval
    except ImportError:  # the code before issue 25: a beat a second
        return 1.0
    return interval(lost_after)


def load_stream(path: Path = STREAM) -> list[tuple[float, dict[str, Any]]]:
    """(seconds since the run began, event as a dict) of the recorded agent."""
    data = json.loads(path.read_text())
    return [(float(item["dt"]), item["event"]) for item in data["events"]]


def _client(port: int, timeout: float = 60.0) -> Any:
    from torch.distributed import PrefixStore, TCPStore

    store = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=timeout), wait_for_workers=False)
    return PrefixStore(PREFIX, store)


# -- the agents' side (worker processes) --


def _stamped(event: dict[str, Any], now: float) -> Any:
    """The recorded event as if it happened now (its t and t_start moved together)."""
    from rigcheck.engine.events import event_from_dict

    moved = dict(event)
    if moved.get("t_start") is not None and moved.get("t") is not None:
        moved["t_start"] = now - (float(moved["t"]) - float(moved["t_start"]))
    moved["t"] = now
    return event_from_dict(moved)


def worker(
    port: int, ranks: list[int], world: int, pace: float, stop: dict[int, float], jitter: float, beat_s: float
) -> None:
    """Each rank's agent: announce, replay the stream at `pace` (1 = its real pace) with a heartbeat a second,
    then its end; a rank in `stop` goes silent `stop[rank]` seconds in (a lost host). Prints a JSON line per stop."""
    import random

    from rigcheck.engine.fleet.channel import FleetChannel

    stream = load_stream()
    rng = random.Random(ranks[0])
    # a connection stalls the store's server here for up to 5 s (the c10d server looks up the client's host
    # name and the lookup times out on this VM), so 256 clients connect 64 at a time, ~100 s in all
    with ThreadPoolExecutor(64) as pool:
        clients = list(pool.map(lambda _: _client(port), ranks))
    # each agent's held burst is sent on this thread's schedule (FLUSH), not by a timer thread per agent
    channels = {
        rank: FleetChannel(client, rank, world, KEY, RUN, timer=False)
        for rank, client in zip(ranks, clients, strict=True)
    }
    for rank, channel in channels.items():
        channel.beat()
        channel.announce({"name": f"sim-{rank:04d}", "devices": ["cpu"], "stages": [], "profile": "quick"})
    print(json.dumps({"ready": time.time()}), flush=True)
    go = threading.Event()  # every worker's agents start their stream together, once all have connected
    threading.Thread(target=lambda: (sys.stdin.readline(), go.set()), daemon=True).start()
    while not go.wait(0.2):
        for channel in channels.values():  # joined agents beat while they wait, as the real ones do
            channel.beat_if_quiet(beat_s)
    begun = time.monotonic()
    due: list[tuple[float, int, int]] = []  # (when, rank, index into the stream; BEAT, FLUSH, len(stream) the end)
    flushing: set[int] = set()  # agents with a FLUSH in `due`
    for rank in channels:
        heapq.heappush(due, (begun + rng.uniform(0, jitter), rank, 0))
        heapq.heappush(due, (begun + beat_s, rank, BEAT))
    late: list[float] = []  # how far behind its schedule this process ran: agents starved of CPU beat late
    silent: set[int] = set()
    while due:
        when, rank, index = heapq.heappop(due)
        wait = when - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            late.append(-wait)
        if rank in silent:
            continue
        if rank in stop and time.monotonic() - begun >= stop[rank]:
            silent.add(rank)
            # silent since its last write of its state (a burst held then is lost, as in a crash): the time rank
            # 0's clock for it starts
            written = time.time() - (time.monotonic() - channels[rank]._written)
            print(json.dumps({"stopped": rank, "t": written}), flush=True)
            continue
        channel = channels[rank]
        if index == BEAT:  # as the agent's Heartbeat does: no beat when a burst wrote the state lately
            wait = channel.beat_if_quiet(beat_s)
            heapq.heappush(due, (time.monotonic() + wait, rank, BEAT))
            continue
        if index == FLUSH:
            flushing.discard(rank)
            channel.flush_due()
        elif index >= len(stream):
            channel.finish({"exit_code": 0, "run_id": 1, "store": "/sim/rigcheck.db"})
            silent.add(rank)  # its heartbeat stops with it, as the agent's does once it has finished
            continue
        else:
            channel.publish(_stamped(stream[index][1], time.time()))
        held = channel.due()
        if held is not None and rank not in flushing:
            flushing.add(rank)
            heapq.heappush(due, (held, rank, FLUSH))
        if index == FLUSH:
            continue
        gap = (stream[index + 1][0] - stream[index][0]) / pace if index + 1 < len(stream) else 0.05
        heapq.heappush(due, (when + gap, rank, index + 1))
    late.sort()
    p95 = late[int(0.95 * len(late))] if late else 0.0
    print(json.dumps({"finished": time.time(), "late_p95": p95, "late_max": late[-1] if late else 0.0}), flush=True)


# -- rank 0's side (this process) --


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _thread_cpu(tid: int | None) -> float:
    if tid is None:
        return 0.0
    try:
        fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def simulate(
    n: int,
    pace: float = 1.0,
    lost_after: float = 30.0,
    stopped: int = 2,
    workers: int = 4,
    jitter: float = 2.0,
    workdir: Path | None = None,
    say: Any = lambda text: None,
) -> dict[str, Any]:
    """One simulated fleet of `n` agents; the figures as a dict."""
    from rigcheck.engine.fleet.agent import finish_fleet
    from rigcheck.engine.fleet.channel import FleetChannel
    from rigcheck.engine.fleet.collector import Collector
    from rigcheck.engine.report.fleet_summary import fleet_summary
    from rigcheck.engine.store import Store
    from torch.distributed import TCPStore

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * n + 256)), hard))
    workdir = Path(workdir or tempfile.mkdtemp(prefix="fleet-scale-"))
    try:
        server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=True)
        backend = "libuv" if getattr(server, "libuvBackend", False) else "classic"
    except TypeError:
        server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        backend = "classic"
    port = server.port
    stream = load_stream()
    length = stream[-1][0] / pace
    store = Store(workdir / f"fleet-{n}.db")
    fleet = {"id": RUN, "world": n, "launcher": "simulation", "rank0": "sim-0000"}
    run_id = store.begin_fleet_run(
        ["probe", "verify", "matmul", "bandwidth", "training"], "quick", sys.executable, [], fleet
    )
    latencies: list[float] = []
    progress = [0]  # Progress rows: the channel coalesces them (two a second), so fewer may arrive
    original = store._record

    def timed_record(rid: int, event: Any, host: str) -> None:
        original(rid, event, host)
        if host:
            latencies.append(time.time() - event.t)
            progress[0] += type(event).__name__ == "Progress"

    store._record = timed_record  # type: ignore[method-assign]
    channel = FleetChannel(_client(port), 0, n, KEY, RUN)
    collector = Collector(store, run_id, channel, fleet, join_timeout=300.0, lost_after=lost_after)
    polls: list[tuple[float, float]] = []  # (when it began, seconds it took): a slow poll delays every row
    poll, polling = collector.poll, [0.0]
    streaming = threading.Event()  # the agents have all connected and stream: slow polls sampled from then
    where: Counter[str] = Counter()  # where a poll past half a second was, sampled: what makes a poll slow

    def timed_poll() -> None:
        began = polling[0] = time.monotonic()
        poll()
        polling[0] = 0.0
        polls.append((began, time.monotonic() - began))

    def sample_slow_polls() -> None:
        while not collector._done.is_set():
            time.sleep(0.1)
            if polling[0] and time.monotonic() - polling[0] > 0.5 and streaming.is_set():
                frame = sys._current_frames().get(collector._thread.ident or -1)
                names = []
                while frame is not None and len(names) < 4:
                    if "rigcheck" in frame.f_code.co_filename and "fleet_scale" not in frame.f_code.co_filename:
                        names.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                    frame = frame.f_back
                where[" < ".join(names)] += 1

    collector.poll = timed_poll  # type: ignore[method-assign]
    lose, lost_hosts = collector._lose, []  # each host named lost: rank, when, its beats, when last seen, reads

    def noted_lose(host: Any, why: str, refused: bool = False) -> None:
        at = time.monotonic() - started
        lost_hosts.append([host.rank, round(at, 1), host.beats, round(host.beat_seen - started, 1), host.read])
        lose(host, why, refused)

    collector._lose = noted_lose  # type: ignore[method-assign]
    started = time.monotonic()
    collector.open_phase("links")  # as rank 0 does: every agent's arrival is looked for until the phase is decided
    # the stopped agents go silent a third of the way in, spread over the ranks
    stop_ranks = [1 + (k * (n - 1)) // max(1, stopped) for k in range(stopped)] if n > 2 else []
    stop = {rank: length / 3 for rank in stop_ranks}
    per = [list(range(w, n, workers)) for w in range(min(workers, n))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TORCH_CPP_LOG_LEVEL": "ERROR"}
    procs = []
    for ranks in per:
        args = {
            "port": port,
            "ranks": ranks,
            "world": n,
            "pace": pace,
            "stop": {str(r): s for r, s in stop.items() if r in ranks},
            "jitter": jitter,
            "beat_s": heartbeat_interval(lost_after),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps(args)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    lines: list[dict[str, Any]] = []

    def read(proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                lines.append(json.loads(line))

    readers = [threading.Thread(target=read, args=(p,), daemon=True) for p in procs]
    for reader in readers:
        reader.start()
    say(f"N={n}: {backend} store on port {port}, {len(procs)} worker process(es), a {length:.0f} s stream")
    connecting = time.monotonic()
    collector.start()  # the agents join while the others connect, as under torchrun
    threading.Thread(target=sample_slow_polls, daemon=True).start()
    while sum("ready" in item for item in lines) < len(procs):
        if time.monotonic() - connecting > 900 or any(p.poll() is not None for p in procs):
            raise RuntimeError("the simulated agents did not all connect")
        time.sleep(0.1)
    connect_s = time.monotonic() - connecting
    load_start = os.getloadavg()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    cpu0, wall0 = os.times(), time.monotonic()
    streaming.set()
    thread0 = _thread_cpu(collector._thread.native_id)
    rss_peak, keys_peak, lost_at = _rss_mb(), 0, {}
    deadline = wall0 + length * 3 + lost_after + 120
    while not collector.wait(0.5) and time.monotonic() < deadline:
        rss_peak = max(rss_peak, _rss_mb())
        keys_peak = max(keys_peak, server.num_keys())
        for host in collector.hosts:
            if host.rank in stop and host.state == "lost" and host.rank not in lost_at:
                lost_at[host.rank] = time.time()
    for host in collector.hosts:
        if host.rank in stop and host.state == "lost" and host.rank not in lost_at:
            lost_at[host.rank] = time.time()
    cpu1, wall1 = os.times(), time.monotonic()
    thread1 = _thread_cpu(collector._thread.native_id)
    keys_end = server.num_keys()
    t_end = time.monotonic()
    code = finish_fleet(store, collector, run_id, 0.0)
    report = store.report(run_id)
    assert report is not None
    summary = fleet_summary(report)
    end_s = time.monotonic() - t_end
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    streamed = [d for b, d in polls if b >= wall0]  # the polls while the agents streamed, not while they connected
    stopped_at = {int(item["stopped"]): float(item["t"]) for item in lines if "stopped" in item}
    lost_s = [lost_at[r] - stopped_at[r] for r in stop if r in lost_at and r in stopped_at]
    wall = wall1 - wall0
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    states = [h.state for h in collector.hosts]
    ends = [item for item in lines if "finished" in item]
    result = {
        "n": n,
        "backend": backend,
        "stream_events": len(stream),
        "stream_s": round(length, 1),
        "wall_s": round(wall, 1),
        "cpu_share": round(cpu / wall, 3),
        "collector_cpu_share": round((thread1 - thread0) / wall, 3),
        "rss_mb": round(max(rss_peak, _rss_mb()), 1),
        "rows": len(latencies),
        "expected_rows": sum(1 for _, e in stream if e.get("kind") not in ("RunStarted", "RunFinished")) * n,
        "other_rows": len(latencies) - progress[0],
        "expected_other_rows": sum(1 for _, e in stream if e.get("kind") not in EXCEPT) * n,
        "latency_p50_s": round(_pct(latencies, 0.50), 3),
        "latency_p95_s": round(_pct(latencies, 0.95), 3),
        "latency_max_s": round(max(latencies, default=float("nan")), 3),
        "keys_peak": keys_peak,
        "keys_end": keys_end,
        "lost_after_s": lost_after,
        "lost_named_s": [round(s, 1) for s in lost_s],
        "lost_named_max_s": round(max(lost_s), 1) if lost_s else None,
        "stopped": len(stop),
        "end_s": round(end_s, 2),
        "summary_lines": summary.count("\n") + 1,
        "exit_code": code,
        "done": states.count("done"),
        "lost": states.count("lost"),
        "errors": collector.errors[:3],
        "beat_s": heartbeat_interval(lost_after),
        "connect_s": round(connect_s, 1),
        "poll_p50_s": round(_pct(streamed, 0.50), 3),
        "poll_p95_s": round(_pct(streamed, 0.95), 3),
        "poll_max_s": round(max(streamed, default=0.0), 2),
        "polls_over_1s": sum(1 for d in streamed if d > 1.0),
        "slow_polls": [[round(b - wall0, 1), round(d, 2)] for b, d in polls if d > 1.0][:12],  # (began s, took s)
        "slow_poll_at": dict(where.most_common(6)),
        "lost_hosts": lost_hosts,
        "go_s": round(wall0 - started, 1),
        "lost_why": sorted({v["explanation"][:160] for v in report["verdicts"] if v["check_name"] == "agent"})[:4],
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "agents_late_p95_s": round(max((e["late_p95"] for e in ends), default=0.0), 2),
        "agents_late_max_s": round(max((e["late_max"] for e in ends), default=0.0), 2),
    }
    store.close() if hasattr(store, "close") else None
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[64, 256, 1024])
    parser.add_argument("--pace", type=float, default=1.0, help="1 is the recorded agent's real pace")
    parser.add_argument("--lost-after", type=float, default=30.0, help="the agent's default is 30 s")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        worker(
            spec["port"],
            spec["ranks"],
            spec["world"],
            spec["pace"],
            {int(r): float(s) for r, s in spec["stop"].items()},
            spec["jitter"],
            spec["beat_s"],
        )
        return 0
    if any(n < 2 or n > 65536 for n in args.sizes) or args.pace <= 0 or args.lost_after <= 0:
        print("fleet_scale: sizes are 2 to 65536 agents; --pace and --lost-after are above 0", file=sys.stderr)
        return 2
    results = []
    for n in args.sizes:
        result = simulate(n, args.pace, args.lost_after, workers=args.workers, say=lambda t: print(t, file=sys.stderr))
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
