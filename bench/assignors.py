"""Benchmark kgroup's assignors against kafka-python's on the same inputs, in the same run.

Rows (issue 4): uniform (partitions, consumers, topics) = (1,000, 10, 10), (20,000, 200, 100),
(1,000,000, 2,000, 500), and non-uniform (100,000 partitions over 100 topics, 1,000 consumers each subscribing
to a random half of the topics). Each row is a fresh assignment, then a second round after 10% of the consumers
(chosen with a fixed seed) leave, each survivor reporting what it owned (sticky: user data; cooperative:
owned partitions + generation). Printed per round: seconds, partitions moved between surviving members, and
balance (max - min partitions per member). Every run is a subprocess with a time limit (default 300 s), so a
peer that cannot finish is reported as "did not finish in 300 s".

    .venv/bin/python bench/assignors.py            # all rows
    .venv/bin/python bench/assignors.py --quick    # the two small rows, 60 s limit
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ROWS = {
    "1k": dict(partitions=1_000, consumers=10, topics=10, uniform=True),
    "20k": dict(partitions=20_000, consumers=200, topics=100, uniform=True),
    "1M": dict(partitions=1_000_000, consumers=2_000, topics=500, uniform=True),
    "non-uniform": dict(partitions=100_000, consumers=1_000, topics=100, uniform=False),
}
STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def scenario(row: str):
    spec = ROWS[row]
    nt, nc = spec["topics"], spec["consumers"]
    per = spec["partitions"] // nt
    topics = [f"topic-{i:03d}" for i in range(nt)]
    counts = {t: per for t in topics}
    members = [f"consumer-{i:04d}" for i in range(nc)]
    rnd = random.Random(20240501)
    if spec["uniform"]:
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: sorted(rnd.sample(topics, nt // 2)) for m in members}
    leaving = set(rnd.sample(members, nc // 10))
    return counts, subs, leaving


def stats(before, after, leaving):
    """(moved between surviving members, balance) of round ``after`` given round ``before`` owners."""
    owner = {}
    for m, parts in (before or {}).items():
        for p in parts:
            owner[p] = m
    moved = 0
    for m, parts in after.items():
        for p in parts:
            o = owner.get(p)
            if o is not None and o != m and o not in leaving:
                moved += 1
    sizes = [len(v) for v in after.values()]
    return moved, max(sizes) - min(sizes)


# --- one implementation, one row, in this process ------------------------------------------------------------

def run_kgroup(strategy, row):
    from consumer.assignors import Subscription, get_assignor
    counts, subs, leaving = scenario(row)
    assignor = get_assignor(strategy)
    t0 = time.perf_counter()
    r1 = assignor.assign(counts, {m: Subscription(t) for m, t in subs.items()})
    t1 = time.perf_counter() - t0
    first = {m: [(p.topic, p.partition) for p in a.partitions] for m, a in r1.items()}
    survivors = {}
    for m, t in subs.items():
        if m in leaving:
            continue
        owned = r1[m].partitions
        if strategy == "sticky":  # eager: what it owned travels in StickyAssignorUserData (encoded by the member)
            survivors[m] = Subscription(t, assignor.subscription_user_data(set(t), owned, 1), (), 1)
        else:
            survivors[m] = Subscription(t, None, owned, 1)
    assignor2 = get_assignor(strategy)
    t0 = time.perf_counter()
    r2 = assignor2.assign(counts, survivors)
    t2 = time.perf_counter() - t0
    second = {m: [(p.topic, p.partition) for p in a.partitions] for m, a in r2.items()}
    return first, second, leaving, t1, t2


def run_kafka_python(strategy, row):
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    cls = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
           "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[strategy]
    counts, subs, leaving = scenario(row)
    parts = {t: set(range(n)) for t, n in counts.items()}
    cluster = SimpleNamespace(partitions_for_topic=parts.get, topics=lambda: set(parts))

    def member(m, topics, owned=None, generation=-1):
        by_topic = {}
        for t, p in owned or ():
            by_topic.setdefault(t, []).append(p)
        user_data = b""
        if strategy == "sticky" and owned is not None:
            user_data = StickyAssignorUserData(list(by_topic.items()), generation).encode()
        md = SimpleNamespace(version=1, topics=topics, user_data=user_data, generation_id=generation,
                             owned_partitions=[SimpleNamespace(topic=t, partitions=ps) for t, ps in by_topic.items()])
        return SimpleNamespace(member_id=m, group_instance_id=None, metadata=md)

    def flatten(result):
        out = {}
        for m, a in result.items():
            out[m] = [(t, p) for t, ps in a.assigned_partitions for p in ps]
        return out

    assignor = cls()
    t0 = time.perf_counter()
    r1 = assignor.assign(cluster, [member(m, t) for m, t in subs.items()])
    t1 = time.perf_counter() - t0
    first = flatten(r1)
    members2 = [member(m, t, first[m], 1) for m, t in subs.items() if m not in leaving]
    assignor2 = cls()
    t0 = time.perf_counter()
    r2 = assignor2.assign(cluster, members2)
    t2 = time.perf_counter() - t0
    return first, flatten(r2), leaving, t1, t2


def child(impl, strategy, row):
    fn = run_kgroup if impl == "kgroup" else run_kafka_python
    first, second, leaving, t1, t2 = fn(strategy, row)
    m1, b1 = stats(None, first, leaving)
    m2, b2 = stats(first, second, leaving)
    total1 = sum(len(v) for v in first.values())
    total2 = sum(len(v) for v in second.values())
    print(json.dumps(dict(t1=t1, t2=t2, balance1=b1, balance2=b2, moved2=m2, assigned1=total1, assigned2=total2)))


# --- driver ---------------------------------------------------------------------------------------------------

def measure(impl, strategy, row, limit):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, strategy, row]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(r, limit):
    if r is None:
        return f"did not finish in {limit:.0f} s"
    if "error" in r:
        return "error: " + r["error"][:60]
    return (f"{r['t1']:8.3f}s bal {r['balance1']:<4} | {r['t2']:8.3f}s moved {r['moved2']:<6} bal {r['balance2']:<4}"
            f" (assigned {r['assigned2']})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the 1k and 20k rows, 60 s limit per run")
    ap.add_argument("--rows", nargs="*", choices=list(ROWS), help="rows to run (default: all)")
    ap.add_argument("--strategies", nargs="*", choices=STRATEGIES, default=STRATEGIES)
    ap.add_argument("--limit", type=float, help="per-run time limit in seconds (default 300, --quick 60)")
    ap.add_argument("--no-peer", action="store_true", help="skip kafka-python")
    ap.add_argument("--child", nargs=3, metavar=("IMPL", "STRATEGY", "ROW"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    rows = args.rows or (["1k", "20k"] if args.quick else list(ROWS))
    limit = args.limit or (60.0 if args.quick else 300.0)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; per-run limit {limit:.0f} s")
    print("columns: round 1 (fresh) time, balance | round 2 (10% of consumers left) time, partitions moved "
          "between survivors, balance")
    for row in rows:
        spec = ROWS[row]
        print(f"\n== {row}: {spec['partitions']:,} partitions, {spec['consumers']:,} consumers, "
              f"{spec['topics']} topics, {'uniform' if spec['uniform'] else 'random half of the topics each'}")
        for strategy in args.strategies:
            ours = measure("kgroup", strategy, row, limit)
            print(f"  {strategy:<19} kgroup       {fmt(ours, limit)}")
            if not args.no_peer:
                peer = measure("kafka-python", strategy, row, limit)
                line = f"  {'':<19} kafka-python {fmt(peer, limit)}"
                if ours and peer and "t1" in ours and "t1" in peer:
                    line += f"  speed-up x{(peer['t1'] + peer['t2']) / max(ours['t1'] + ours['t2'], 1e-9):.1f}"
                print(line)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
