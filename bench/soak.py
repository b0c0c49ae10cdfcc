"""Soak (issue 14 item 6): many members heartbeating for a long time must see no spurious session expiry or
rebalance, and the server's CPU and RSS must stay flat.

``kgroup serve`` runs as its own process (3 brokers). This process holds ``--groups`` groups of
``--members-per-group`` members (default 200 x 10 = 2,000), one connection each, speaking the classic protocol
with the lean wire client: FindCoordinator, JoinGroup (MEMBER_ID_REQUIRED first, as Kafka 2.2+ clients), SyncGroup
(the leader sends an empty plan), then a Heartbeat every ``session / 3`` (Kafka's default ratio: 10 s session,
heartbeats about every 3.3 s), each member starting at a random phase.

**Formation** (not measured): until every group has one generation with all its members synced, a member that is
told REBALANCE_IN_PROGRESS rejoins, as a consumer does. **Measurement** (``--minutes``): from then on nothing should
change: any Heartbeat answered with anything but NONE (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID -- a session
expired --, ILLEGAL_GENERATION) is a *spurious* event, and every group's generation at the end must equal its
generation at the start (checked with the fault-control ``describe``). Every 10 s the server's RSS and CPU (from
/proc) and the heartbeat rate and worst heartbeat latency are sampled; the curve is printed.

Usage: python bench/soak.py [--minutes 10] [--groups 200] [--members-per-group 10] [--session-ms 10000]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from client.control import ControlClient  # noqa: E402
from client.wire import WireClient  # noqa: E402
from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription,  # noqa: E402
                                        encode_assignment, encode_subscription)
from protocol.messages import (FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,  # noqa: E402
                               SyncGroupRequest)

TOPIC = "soak"
REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED = 27, 79


def proc_stats(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS in kB) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return cpu, rss


class Stats:
    def __init__(self) -> None:
        self.measuring = False
        self.heartbeats = 0
        self.spurious: list[str] = []
        self.max_latency_s = 0.0
        self.formed: dict[str, int] = {}   # group -> members synced in the current generation


async def member(host: str, port: int, group: str, i: int, n_in_group: int, session_ms: int, stats: Stats,
                 formed: asyncio.Event, stop: asyncio.Event, gens: dict[str, int]) -> None:
    c = await WireClient.connect(host, port, client_id=f"{group}-m{i}", timeout=60)
    sub = encode_subscription(ConsumerProtocolSubscription(topics=[TOPIC]))
    empty = encode_assignment(ConsumerProtocolAssignment(assigned_partitions=[]))
    member_id = ""
    interval = session_ms / 3000.0
    try:
        while not stop.is_set():
            # --- join + sync (formation; during measurement it is a spurious rebalance, counted by the caller)
            join = JoinGroupRequest(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=60000,
                                    member_id=member_id, protocol_type="consumer",
                                    protocols=[JoinGroupRequest.Protocol(name="range", metadata=sub)])
            r = await c.call(join, 9, timeout=120)
            if r.error_code == MEMBER_ID_REQUIRED:
                member_id = r.member_id
                continue
            if r.error_code != 0:
                raise RuntimeError(f"{group}: JoinGroup error {r.error_code}")
            member_id = r.member_id
            plan = ([SyncGroupRequest.Assignment(member_id=m.member_id, assignment=empty) for m in r.members]
                    if r.leader == r.member_id else [])
            s = await c.call(SyncGroupRequest(group_id=group, generation_id=r.generation_id, member_id=member_id,
                                              protocol_type="consumer", protocol_name="range", assignments=plan),
                             5, timeout=120)
            if s.error_code == REBALANCE_IN_PROGRESS:
                continue
            if s.error_code != 0:
                raise RuntimeError(f"{group}: SyncGroup error {s.error_code}")
            gen = r.generation_id
            if not stats.measuring and len(r.members or []) == n_in_group and r.leader == r.member_id:
                gens[group] = gen
            await asyncio.sleep(random.uniform(0, interval))  # a random phase
            # --- heartbeats
            while not stop.is_set():
                t0 = time.monotonic()
                h = await c.call(HeartbeatRequest(group_id=group, generation_id=gen, member_id=member_id), 4,
                                 timeout=60)
                lat = time.monotonic() - t0
                if stats.measuring:
                    stats.heartbeats += 1
                    stats.max_latency_s = max(stats.max_latency_s, lat)
                    if h.error_code != 0:
                        stats.spurious.append(f"{group} {member_id}: Heartbeat error {h.error_code}")
                if h.error_code == REBALANCE_IN_PROGRESS:
                    break  # rejoin
                if h.error_code != 0:
                    member_id = "" if h.error_code == 25 else member_id  # UNKNOWN_MEMBER_ID: join anew
                    break
                try:
                    await asyncio.wait_for(stop.wait(), max(0.0, interval - lat))
                except asyncio.TimeoutError:
                    pass
    finally:
        await c.close()


async def main_async(args: argparse.Namespace) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kgroup", "serve", "--port", "0", "--topic", f"{TOPIC}:1",
        "--group-initial-rebalance-delay-ms", "3000", stdout=asyncio.subprocess.PIPE, env=env, cwd=ROOT)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        bootstrap = line.strip().split("=", 1)[1]
        h0, p0 = bootstrap.split(",")[0].rsplit(":", 1)
        boot = WireClient
        groups = [f"soak-g{i}" for i in range(args.groups)]
        coords = {}
        c = await boot.connect(h0, int(p0), client_id="soak")
        for g in groups:
            r = await c.call(FindCoordinatorRequest(key=g, key_type=0), 3)
            coords[g] = (r.host, r.port)
        await c.close()
        stats, stop, formed = Stats(), asyncio.Event(), asyncio.Event()
        gens: dict[str, int] = {}
        tasks = []
        t_start = time.monotonic()
        for g in groups:
            for i in range(args.members_per_group):
                tasks.append(asyncio.create_task(member(*coords[g], g, i, args.members_per_group, args.session_ms,
                                                        stats, formed, stop, gens)))
            await asyncio.sleep(0.005)
        print(f"{len(tasks)} members connecting ...", file=sys.stderr, flush=True)
        while len(gens) < len(groups):
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()
            await asyncio.sleep(0.5)
            if time.monotonic() - t_start > 300:
                raise RuntimeError(f"only {len(gens)}/{len(groups)} groups formed in 300 s")
        await asyncio.sleep(args.session_ms / 1000.0)  # let the last generations settle
        with ControlClient(f"{h0}:{p0}", timeout=30) as ctl:
            start_gens = {g: ctl.call("describe", group=g)["group"]["generation"] for g in groups}
        print(f"formed in {time.monotonic() - t_start:.1f} s; measuring for {args.minutes:g} min",
              file=sys.stderr, flush=True)
        stats.measuring = True
        samples = []
        cpu0, _ = proc_stats(proc.pid)
        t0 = time.monotonic()
        last_cpu, last_t, last_hb = cpu0, t0, 0
        while time.monotonic() - t0 < args.minutes * 60:
            await asyncio.sleep(10)
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()
            cpu, rss = proc_stats(proc.pid)
            now = time.monotonic()
            s = {"t_s": round(now - t0), "rss_mb": round(rss / 1024, 1),
                 "cpu_pct": round(100 * (cpu - last_cpu) / (now - last_t), 1),
                 "hb_per_s": round((stats.heartbeats - last_hb) / (now - last_t)),
                 "max_hb_latency_ms": round(stats.max_latency_s * 1000), "spurious": len(stats.spurious)}
            samples.append(s)
            last_cpu, last_t, last_hb = cpu, now, stats.heartbeats
            print(f"  {s['t_s']:5d} s  RSS {s['rss_mb']:6.1f} MB  CPU {s['cpu_pct']:5.1f}%  "
                  f"{s['hb_per_s']:5d} hb/s  worst hb {s['max_hb_latency_ms']} ms  spurious {s['spurious']}",
                  file=sys.stderr, flush=True)
        stats.measuring = False
        with ControlClient(f"{h0}:{p0}", timeout=30) as ctl:
            end = {g: ctl.call("describe", group=g)["group"] for g in groups}
        changed = [g for g in groups if end[g]["generation"] != start_gens[g]]
        short = [g for g in groups if len(end[g]["members"]) != args.members_per_group]
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        cpu1, _ = proc_stats(proc.pid)
        warm = samples[1:] or samples
        return {"groups": args.groups, "members": len(tasks), "session_ms": args.session_ms,
                "minutes": args.minutes, "heartbeats": stats.heartbeats, "spurious_events": len(stats.spurious),
                "spurious_examples": stats.spurious[:5], "generation_changes": len(changed),
                "groups_not_full": len(short), "max_heartbeat_latency_ms": round(stats.max_latency_s * 1000),
                "rss_mb_first": warm[0]["rss_mb"], "rss_mb_last": samples[-1]["rss_mb"],
                "rss_mb_max": max(s["rss_mb"] for s in samples),
                "cpu_pct_mean": round(100 * (cpu1 - cpu0) / (time.monotonic() - t0), 1),
                "cpu_us_per_heartbeat": round(1e6 * (cpu1 - cpu0) / max(1, stats.heartbeats), 1),
                "samples": samples}
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="measured soak time (default 10)")
    ap.add_argument("--groups", type=int, default=200, help="groups (default 200)")
    ap.add_argument("--members-per-group", type=int, default=10, help="members per group (default 10)")
    ap.add_argument("--session-ms", type=int, default=10000, help="session.timeout.ms (default 10000)")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args()
    if args.minutes <= 0 or args.groups < 1 or args.members_per_group < 1:
        ap.error("--minutes, --groups and --members-per-group must be positive")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one socket per member
    rep = asyncio.run(main_async(args))
    out = {k: v for k, v in rep.items() if k != "samples"}
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep, f, indent=2)
    flat = rep["rss_mb_last"] <= rep["rss_mb_first"] * 1.1 + 10
    print(f"RSS {'flat' if flat else 'GROWING'}: {rep['rss_mb_first']} MB after 10 s -> {rep['rss_mb_last']} MB",
          file=sys.stderr)
    return 0 if rep["spurious_events"] == 0 and rep["generation_changes"] == 0 and flat else 1


if __name__ == "__main__":
    sys.exit(main())
