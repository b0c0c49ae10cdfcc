"""Hostile bytes against a running ``kgroup serve`` (issue 14): a structure-aware fuzzer (client/wirefuzz.py) sends
frames generated from the protocol schemas and mutated field by field, while a healthy three-member group
heartbeats and commits beside it.

Measured and checked:

* **crashes** -- the server process must still run and answer at the end (and shut down cleanly on SIGTERM);
* **hangs** -- every frame must be answered, or its connection closed, within ``--deadline`` (1 s); a
  well-formed request that Kafka too may leave waiting (a JoinGroup/SyncGroup parked in a rebalance, a Fetch
  waiting for data, a Produce with acks=0) is counted apart, as *waiting*;
* **tracebacks** in the server's log (stderr, WARNING level) -- none allowed -- and the number of log lines
  (bad-input warnings are rate-limited: one line per kind per 10 s);
* **RSS** of the server, sampled every 2 s (the curve is printed; "flat" means the end is within 10% + 10 MB of
  the value once warmed up);
* **the healthy group** -- three members of ``healthy-group`` heartbeating every second and committing every 2 s
  must see no error, no rebalance and no generation change, and their last commits must be read back.

The server runs with ``--data-dir`` (fsync never: the disk is not what is measured), a short initial rebalance
delay, session timeouts up to 10 s and offset retention of one minute, so that the groups the fuzzer creates
come and go instead of accumulating.

Usage: python bench/fuzz_server.py [--frames 1000000] [--seed 1] [--concurrency 64] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import time
from typing import Callable

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from client.wire import WireClient  # noqa: E402
from client.wirefuzz import FrameFactory, FuzzClient, Outcome, served_versions  # noqa: E402
from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription,  # noqa: E402
                                        encode_assignment, encode_subscription)
from protocol.messages import (FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,  # noqa: E402
                               OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest)

FUZZ_GROUPS = [f"fuzz-g{i}" for i in range(6)]
FUZZ_TOPICS = {"fuzz-t": 4}
HEALTHY_GROUP, HEALTHY_TOPIC = "healthy-group", "healthy"


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class HealthyGroup:
    """Three well-behaved members: join, sync, then heartbeat every second and commit every 2 s; every error,
    rebalance or generation change is recorded."""

    def __init__(self, bootstrap: tuple[str, int], n: int = 3) -> None:
        self.bootstrap = bootstrap
        self.n = n
        self.errors: list[str] = []
        self.generation: int | None = None
        self.heartbeats = 0
        self.commits = 0
        self.max_latency_s = 0.0
        self.committed: dict[int, int] = {}
        self._stop = asyncio.Event()
        self._conns: list[WireClient] = []

    async def start(self) -> None:
        c = await WireClient.connect(*self.bootstrap, client_id="healthy")
        r = await c.call(FindCoordinatorRequest(key=HEALTHY_GROUP, key_type=0), 3, timeout=10)
        await c.close()
        self.coordinator = (r.host, r.port)
        self._conns = [await WireClient.connect(*self.coordinator, client_id=f"healthy-{i}") for i in range(self.n)]
        sub = encode_subscription(ConsumerProtocolSubscription(topics=[HEALTHY_TOPIC]))
        self._join = lambda mid: JoinGroupRequest(group_id=HEALTHY_GROUP, session_timeout_ms=10000,
                                                  rebalance_timeout_ms=10000, member_id=mid, protocol_type="consumer",
                                                  protocols=[JoinGroupRequest.Protocol(name="range", metadata=sub)])
        ids = [(await c.call(self._join(""), 9, timeout=10)).member_id for c in self._conns]
        synced: dict[int, int] = {}

        async def settle(i: int) -> None:
            """A consumer's loop until the group is stable: join, sync (the leader assigns), heartbeat; rejoin
            on REBALANCE_IN_PROGRESS."""
            c, mid = self._conns[i], ids[i]
            while True:
                j = await c.call(self._join(mid), 9, timeout=30)
                if j.error_code:
                    await asyncio.sleep(0.1)
                    continue
                plan = [SyncGroupRequest.Assignment(member_id=m.member_id, assignment=encode_assignment(
                    ConsumerProtocolAssignment(assigned_partitions=[(HEALTHY_TOPIC, [k])])))
                    for k, m in enumerate(sorted(j.members, key=lambda m: m.member_id))] \
                    if j.leader == mid else []
                sy = await c.call(SyncGroupRequest(group_id=HEALTHY_GROUP, generation_id=j.generation_id,
                                                   member_id=mid, protocol_type="consumer", protocol_name="range",
                                                   assignments=plan), 5, timeout=30)
                if sy.error_code:
                    continue
                synced[i] = j.generation_id
                while True:
                    await asyncio.sleep(0.2)
                    hb = await c.call(HeartbeatRequest(group_id=HEALTHY_GROUP, generation_id=j.generation_id,
                                                       member_id=mid), 4, timeout=10)
                    if hb.error_code:
                        break
                    if len(synced) == self.n and len(set(synced.values())) == 1 and len(j.members or []) in (
                            0, self.n):
                        return

        await asyncio.wait_for(asyncio.gather(*(settle(i) for i in range(self.n))), 60)
        gen = synced[0]
        self.ids, self.generation = ids, gen
        self._tasks = [asyncio.create_task(self._member(i)) for i in range(self.n)]

    async def _member(self, i: int) -> None:
        c, mid = self._conns[i], self.ids[i]
        tick = 0
        while not self._stop.is_set():
            await asyncio.sleep(1.0)
            tick += 1
            t0 = time.monotonic()
            try:
                hb = await c.call(HeartbeatRequest(group_id=HEALTHY_GROUP, generation_id=self.generation,
                                                   member_id=mid), 4, timeout=10)
                if hb.error_code:
                    self.errors.append(f"member {i}: heartbeat error {hb.error_code}")
                self.heartbeats += 1
                if tick % 2 == 0:
                    off = tick * 10 + i
                    T = OffsetCommitRequest.Topic
                    r = await c.call(OffsetCommitRequest(
                        group_id=HEALTHY_GROUP, generation_id_or_member_epoch=self.generation, member_id=mid,
                        topics=[T(name=HEALTHY_TOPIC, partitions=[T.Partition(partition_index=i,
                                                                              committed_offset=off)])]), 8,
                        timeout=10)
                    err = r.topics[0].partitions[0].error_code
                    if err:
                        self.errors.append(f"member {i}: commit error {err}")
                    else:
                        self.committed[i] = off
                        self.commits += 1
            except Exception as e:  # noqa: BLE001 - a timeout or a closed connection is a failure here
                self.errors.append(f"member {i}: {type(e).__name__}: {e}")
            self.max_latency_s = max(self.max_latency_s, time.monotonic() - t0)

    async def stop(self) -> dict:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        c = self._conns[0]
        r = await c.call(OffsetFetchRequest(group_id=HEALTHY_GROUP, topics=[OffsetFetchRequest.Topic(
            name=HEALTHY_TOPIC, partition_indexes=list(range(self.n)))]), 7, timeout=10)
        read = {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}
        lost = {p: (o, read.get(p)) for p, o in self.committed.items() if read.get(p) != o}
        for c in self._conns:
            await c.close()
        return {"errors": self.errors[:20], "error_count": len(self.errors), "heartbeats": self.heartbeats,
                "commits": self.commits, "lost_commits": lost, "generation": self.generation,
                "max_latency_ms": round(self.max_latency_s * 1000, 1)}


async def fuzz(frames: int, seed: int = 1, concurrency: int = 64, deadline_s: float = 1.0,
               progress: bool = True, workdir: str | None = None,
               observe: Callable[[Outcome], None] | None = None) -> dict:
    """Start ``kgroup serve``, fuzz it with ``frames`` frames beside a healthy group, stop it; the report.

    ``observe`` is called with the running outcome about twice a second (a test's watchdog bounds the run by its
    progress rather than by a total time that a loaded machine can exceed)."""
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="kgroup-fuzz-")
    log_path = os.path.join(workdir, "server.log")
    data_dir = os.path.join(workdir, "data")
    cmd = [sys.executable, "-m", "kgroup", "serve", "--port", "0", "--brokers", "3",
           "--topic", "fuzz-t:4", "--topic", f"{HEALTHY_TOPIC}:3", "--group-initial-rebalance-delay-ms", "0",
           "--group-max-session-timeout-ms", "10000", "--offsets-retention-minutes", "1",
           "--data-dir", data_dir, "--fsync", "never", "--offsets-history-retention-bytes", str(64 << 20),
           "--log-level", "WARNING"]
    logf = open(log_path, "wb")
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE, stderr=logf, cwd=ROOT,
                                                env=dict(os.environ, PYTHONPATH=ROOT))
    report: dict = {"frames": frames, "seed": seed, "concurrency": concurrency, "deadline_s": deadline_s}
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
        if not line.startswith("kgroup serving bootstrap="):
            raise RuntimeError(f"kgroup serve did not start: {line!r}")
        addrs = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in line.split("=", 1)[1].split(","))]
        served = served_versions(addrs[0])
        healthy = HealthyGroup(addrs[0])
        await healthy.start()
        factory = FrameFactory(random.Random(seed), served, FUZZ_GROUPS, FUZZ_TOPICS)
        client = FuzzClient(addrs, factory, deadline_s=deadline_s, concurrency=concurrency)
        samples: list[tuple[float, int, int, float]] = []
        t0 = time.monotonic()
        cpu0 = cpu_s(proc.pid)
        last = [0.0]

        def tick(o: Outcome) -> None:
            if observe is not None:
                observe(o)
            now = time.monotonic() - t0
            if not samples or now - samples[-1][0] >= 2.0:
                samples.append((round(now, 1), o.frames, rss_kb(proc.pid), round(cpu_s(proc.pid) - cpu0, 2)))
            if progress and now - last[0] >= 2.0:
                last[0] = now
                print(f"\r  {o.frames:>9,}/{frames:,} frames  {o.frames / max(now, 1e-9):7,.0f}/s  answered "
                      f"{o.answered:,}  closed {o.closed:,}  waiting {o.waiting:,}  hangs {o.hangs}  "
                      f"rss {samples[-1][2] / 1024:.0f} MB   ", end="", file=sys.stderr, flush=True)

        outcome = await client.run(frames, tick)
        elapsed = time.monotonic() - t0
        samples.append((round(elapsed, 1), outcome.frames, rss_kb(proc.pid), round(cpu_s(proc.pid) - cpu0, 2)))
        if progress:
            print(file=sys.stderr)
        alive = proc.returncode is None
        try:
            after = served_versions(addrs[0]) == served
        except OSError:
            after = False
        report["healthy_group"] = await healthy.stop()
        report.update({
            "elapsed_s": round(elapsed, 1), "frames_per_s": round(outcome.frames / elapsed),
            "answered": outcome.answered, "closed": outcome.closed, "waiting": outcome.waiting,
            "hangs": outcome.hangs, "hang_examples": outcome.hang_examples,
            "correlation_mismatches": outcome.corr_mismatch, "connect_errors": outcome.connect_errors,
            "by_mutation": {f"{k}:{v}": n for (k, v), n in sorted(outcome.by_kind.items())},
            "server_alive": alive, "server_answers_after": after, "rss_samples": samples,
            "server_cpu_s": samples[-1][3]})
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
        logf.close()
    report["exit_code"] = proc.returncode
    with open(log_path, "rb") as f:
        text = f.read().decode(errors="replace")
    lines = text.splitlines()
    report["log_lines"] = len(lines)
    report["log_bytes"] = len(text)
    report["tracebacks"] = text.count("Traceback")
    report["log_errors"] = sum(" ERROR " in x for x in lines)
    report["log_head"] = lines[:12]
    rss = [s[2] for s in report.get("rss_samples", [])]
    if rss:
        warm = rss[min(len(rss) - 1, max(1, len(rss) // 5))]
        report["rss_warm_mb"], report["rss_max_mb"], report["rss_end_mb"] = (round(warm / 1024, 1),
                                                                              round(max(rss) / 1024, 1),
                                                                              round(rss[-1] / 1024, 1))
        report["rss_flat"] = rss[-1] <= warm * 1.10 + 10 * 1024
    report["ok"] = bool(report.get("server_alive") and report.get("server_answers_after") and
                        report.get("hangs") == 0 and report["tracebacks"] == 0 and report["exit_code"] == 0 and
                        report.get("correlation_mismatches") == 0 and report.get("rss_flat") and
                        report.get("healthy_group", {}).get("error_count") == 0 and
                        not report.get("healthy_group", {}).get("lost_commits"))
    if own:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return report


def summary(rep: dict) -> str:
    hg = rep.get("healthy_group", {})
    out = [f"frames {rep['frames']:,} in {rep.get('elapsed_s')} s ({rep.get('frames_per_s', 0):,}/s, seed "
           f"{rep['seed']}, {rep['concurrency']} connections, deadline {rep['deadline_s']} s)",
           f"  answered {rep.get('answered', 0):,}   closed {rep.get('closed', 0):,}   waiting (parked as on "
           f"Kafka) {rep.get('waiting', 0):,}   hangs {rep.get('hangs')}   correlation mismatches "
           f"{rep.get('correlation_mismatches')}",
           f"  server: alive {rep.get('server_alive')}, answers after {rep.get('server_answers_after')}, exit code "
           f"{rep.get('exit_code')}, CPU {rep.get('server_cpu_s')} s",
           f"  log: {rep['log_lines']} lines ({rep['log_bytes']:,} bytes), {rep['tracebacks']} tracebacks, "
           f"{rep['log_errors']} ERROR lines",
           f"  RSS: warm {rep.get('rss_warm_mb')} MB, max {rep.get('rss_max_mb')} MB, end {rep.get('rss_end_mb')} MB "
           f"(flat: {rep.get('rss_flat')})",
           f"  healthy group: {hg.get('heartbeats')} heartbeats, {hg.get('commits')} commits, errors "
           f"{hg.get('error_count')}, lost commits {hg.get('lost_commits')}, generation {hg.get('generation')} "
           f"throughout, slowest round trip {hg.get('max_latency_ms')} ms",
           f"  verdict: {'OK' if rep['ok'] else 'FAILED'}"]
    if rep.get("hang_examples"):
        out += ["  hangs:"] + [f"    {h}" for h in rep["hang_examples"]]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=64, help="fuzzing connections (default 64)")
    ap.add_argument("--deadline", type=float, default=1.0, help="seconds a frame may go unanswered (default 1)")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the full report (RSS curve included)")
    args = ap.parse_args()
    rep = asyncio.run(fuzz(args.frames, args.seed, args.concurrency, args.deadline))
    print(summary(rep))
    print("RSS curve (s, frames, MB, server CPU s): " + ", ".join(
        f"({t:.0f}, {n}, {r / 1024:.0f}, {c:.0f})" for t, n, r, c in rep.get("rss_samples", [])[::max(
            1, len(rep.get("rss_samples", [])) // 15)]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep, f, indent=1, default=str)
    sys.exit(0 if rep["ok"] else 1)


if __name__ == "__main__":
    main()
