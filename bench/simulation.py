"""Benchmark: the simulator at scale (issue 6).

1,000 consumers in one group (heartbeat 3 s, session 10 s), one virtual hour, a rolling restart of every
consumer in the middle. Reports wall time, the speed-up over real time (goal: >= 120x, i.e. <= 30 s for the
hour) and protocol messages (requests + responses) per wall-clock second.

    .venv/bin/python bench/simulation.py                 # the full benchmark
    .venv/bin/python bench/simulation.py --quick         # 100 consumers, 10 virtual minutes
    .venv/bin/python bench/simulation.py --codec         # also round-trip every message through the codec
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.model import parse_scenario  # noqa: E402
from scenarios.world import Simulation, run_simulation  # noqa: E402


def scenario(consumers: int, partitions: int, virtual_s: int, batch: int, interval_s: int, codec: bool,
             offsets_partitions: int, strategy: str, static: bool) -> dict:
    mid = virtual_s * 1000 // 2
    return {
        "scenario": {"name": "bench-simulation", "duration_ms": virtual_s * 1000, "seed": 1},
        "cluster": {"brokers": 3, "topics": [{"name": "events", "partitions": partitions}],
                    "broker": {"offsets.topic.num.partitions": offsets_partitions}},
        "network": {"latency_ms": 1, "codec": codec},
        "groups": [{
            "id": "bench", "topics": ["events"], "consumers": consumers, "strategy": strategy, "static": static,
            "config": {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 3_000,
                       "max.poll.interval.ms": 300_000, "enable.auto.commit": False},
            "app": {"poll_timeout_ms": 1000},
        }],
        "timeline": [{"at": mid, "action": "rolling_restart", "group": "bench", "batch": batch,
                      "interval_ms": interval_s * 1000, "down_ms": 5000}],
        "invariants": {"check": ["single-owner-per-generation", "generations-increase", "offsets-monotonic",
                                 "settles"]},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--consumers", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--virtual-s", type=int, default=3600)
    ap.add_argument("--batch", type=int, default=50, help="consumers restarted together in the rolling restart")
    ap.add_argument("--interval-s", type=int, default=30, help="seconds between rolling-restart batches")
    ap.add_argument("--offsets-partitions", type=int, default=50, help="offsets.topic.num.partitions")
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--static", action="store_true")
    ap.add_argument("--codec", action="store_true", help="round-trip every message through the wire codec")
    ap.add_argument("--quick", action="store_true", help="100 consumers, 10 virtual minutes")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.consumers, args.partitions, args.virtual_s, args.batch = 100, 100, 600, 10
    sc = parse_scenario(scenario(args.consumers, args.partitions, args.virtual_s, args.batch, args.interval_s,
                                 args.codec, args.offsets_partitions, args.strategy, args.static), "bench")
    t0 = time.perf_counter()
    sim = Simulation(sc, 1, trace=False)
    prof = cProfile.Profile() if args.profile else None
    if prof:
        prof.enable()
    facts = run_simulation(sim)
    if prof:
        prof.disable()
    wall = time.perf_counter() - t0
    msgs = sim.stats["requests"] + sim.stats["responses"]
    virtual_s = facts["end_ms"] / 1000
    result = {
        "consumers": args.consumers, "partitions": args.partitions, "virtual_s": virtual_s,
        "wall_s": round(wall, 2), "speedup": round(virtual_s / wall, 1), "messages": msgs,
        "messages_per_s": round(msgs / wall), "requests_by_api": dict(sorted(sim.api_counts.items())),
        "rebalances": sum(1 for e in sim.records if e.record.TYPE == "RebalanceStarted"),
        "events": sim.stats["events"], "violations": sum(sim.checker.counts.values()),
        "codec": args.codec, "offsets_partitions": args.offsets_partitions,
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.consumers} consumers, {virtual_s:.0f} s virtual in {wall:.1f} s wall: "
              f"{result['speedup']}x real time (goal >= 120x); {msgs} protocol messages, "
              f"{result['messages_per_s']}/s; {result['rebalances']} rebalances; "
              f"{result['violations']} invariant violations")
        print("requests by API:", result["requests_by_api"])
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return 0 if result["violations"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
