"""Benchmark kgroup's server-side assignors (coordinator.assignors) against baselines measured in the same run.

Rows (issue 15, shaped like Kafka's own ServerSideAssignorBenchmark):

* uniform, homogeneous: 1,000,000 partitions (1,000 topics x 1,000) over 10,000 members subscribed to all;
* uniform, heterogeneous: 200,000 partitions (100 topics x 2,000) over 2,000 members in 5 buckets, each bucket
  subscribing to its own 20 topics (Kafka's ``createHeterogeneousBucketedMembers``);
* range: 1,000,000 partitions (1,000 x 1,000) over 10,000 members, homogeneous.

Each row runs twice: a fresh assignment, then a second round after 10% of the members (every tenth) leave, the
others passing their first-round target as ``current`` -- what the coordinator does. Per round: seconds for
``assign_target`` (input checks and output included), partitions moved between surviving members, balance
(max - min per member). Baselines, same process, same sizes:

* *floor*: a plain Python loop building an output of the same shape (every member's dict of topic -> list of
  partitions, as many partitions as the row), nothing else -- what any Python implementation pays at least;
* *naive port*: a straightforward Python port of the homogeneous builder (tuples per partition, Python sets and
  dicts, no Java order) -- the uniform homogeneous row only.

    .venv/bin/python bench/server_assignors.py              # all rows, best and median of 3
    .venv/bin/python bench/server_assignors.py --quick      # a tenth of the sizes
    .venv/bin/python bench/server_assignors.py --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from coordinator.assignors import assign_target  # noqa: E402
from protocol.java import uuid_string  # noqa: E402

GOAL_S = 2.0


def topic_ids(n: int, salt: int) -> list[str]:
    # deterministic, well-spread Kafka Uuids
    return [uuid_string((i * 0x9E3779B97F4A7C15 + salt) % 2**63, (i * 0xC2B2AE3D27D4EB4F + salt) % 2**63)
            for i in range(1, n + 1)]


def row_spec(name: str, scale: float):
    if name == "uniform homogeneous":
        t, p, m = 1000, 1000, 10_000
    elif name == "uniform heterogeneous":
        t, p, m = 100, 2000, 2000
    else:
        t, p, m = 1000, 1000, 10_000
    t, m = max(5, int(t * scale)), max(5, int(m * scale))
    ids = topic_ids(t, hash(name) % 1000)
    topics = {tid: {"name": f"topic-{i}", "partitions": p} for i, tid in enumerate(ids)}
    members = {}
    buckets = 5
    for i in range(m):
        if name == "uniform heterogeneous":
            b = i * buckets // m
            subs = ids[b * t // buckets:(b + 1) * t // buckets]
        else:
            subs = ids
        members[f"member-{i}"] = {"subscribed_topic_ids": subs}
    assignor = "range" if name == "range" else "uniform"
    return assignor, topics, members


def stats(before: dict | None, after: dict, leaving: set) -> tuple[int, int]:
    owner = {}
    for m, a in (before or {}).items():
        for t, ps in a.items():
            for p in ps:
                owner[(t, p)] = m
    moved = 0
    for m, a in after.items():
        for t, ps in a.items():
            for p in ps:
                o = owner.get((t, p))
                if o is not None and o != m and o not in leaving:
                    moved += 1
    sizes = [sum(map(len, a.values())) for a in after.values()]
    return moved, max(sizes) - min(sizes)


def check(topics: dict, members: dict, result: dict) -> None:
    seen = set()
    for a in result.values():
        for t, ps in a.items():
            for p in ps:
                seen.add((t, p))
    wanted = sum(topics[t]["partitions"] for t in {t for m in members.values() for t in m["subscribed_topic_ids"]})
    assert len(seen) == wanted == sum(len(ps) for a in result.values() for ps in a.values()), "invalid assignment"


def timed(fn):
    """(seconds, result) of ``fn()``, with the cyclic GC paused as assign_target pauses it (fair to the
    baselines, which allocate as much)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()


def floor(shape: dict) -> dict:
    """Build a dict of the same shape as ``shape`` with fresh lists: the cost of merely producing the output."""
    return {m: {t: list(range(len(ps))) for t, ps in a.items()} for m, a in shape.items()}


def naive_homogeneous(members: dict, topics: dict) -> dict:
    """A straightforward port of Kafka's homogeneous builder: per-partition tuples, sets, Python dict order."""
    ids = list(members)
    subscribed = list(next(iter(members.values()))["subscribed_topic_ids"])
    assigned = {(t, p) for m in members.values() for t, ps in m.get("current", {}).items() for p in ps}
    unassigned = [(t, p) for t in subscribed for p in range(topics[t]["partitions"]) if (t, p) not in assigned]
    total = sum(topics[t]["partitions"] for t in subscribed)
    quota_min, extras = divmod(total, len(ids))
    target, unfilled = {}, []
    for i, m in enumerate(ids):
        quota = quota_min + (1 if extras > 0 else 0)
        has_extra = extras > 0
        mine = {}
        for t, ps in members[m].get("current", {}).items():
            if t not in subscribed:
                continue
            keep = set()
            for p in ps:
                if quota > 0:
                    keep.add(p)
                    quota -= 1
                else:
                    unassigned.append((t, p))
            if keep:
                mine[t] = keep
        if quota > 0 and has_extra and len(ids) - i > extras:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((m, quota))
        if has_extra:
            extras -= 1
        target[m] = mine
    k = 0
    for m, q in unfilled:
        for _ in range(q):
            if k == len(unassigned):
                break
            t, p = unassigned[k]
            k += 1
            target[m].setdefault(t, set()).add(p)
    return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in target.items()}


def run_row(name: str, scale: float, repeat: int) -> list[dict]:
    assignor, topics, members = row_spec(name, scale)
    ids = list(members)
    leaving = set(ids[::10])
    lines = []
    prev = None
    for rnd in (1, 2):
        if rnd == 1:
            inp = members
        else:
            inp = {m: dict(members[m], current=prev[m]) for m in ids if m not in leaving}
        times, result = [], None
        for _ in range(repeat):
            dt, result = timed(lambda: assign_target(assignor, inp, topics))
            times.append(dt)
        check(topics, inp, result)
        moved, bal = stats(prev, result, leaving) if rnd == 2 else (0, stats(None, result, set())[1])
        floor_t = min(timed(lambda: floor(result))[0] for _ in range(repeat))
        naive_t = None
        if name == "uniform homogeneous":
            naive_t = min(timed(lambda: naive_homogeneous(inp, topics))[0] for _ in range(repeat))
        lines.append(dict(row=name, round=rnd, best=min(times), median=statistics.median(times), floor=floor_t,
                          naive=naive_t, moved=moved, bal=bal,
                          partitions=sum(len(ps) for a in result.values() for ps in a.values()),
                          members=len(inp)))
        prev = result
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of every row's size")
    ap.add_argument("--repeat", type=int, default=3, help="runs per round (best and median reported)")
    ap.add_argument("--rows", nargs="*", default=["uniform homogeneous", "uniform heterogeneous", "range"])
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    print(f"server-side assignors, {args.repeat} runs per round, goal <= {GOAL_S:.0f} s per round "
          f"(Python {sys.version.split()[0]})")
    print(f"{'row':24} {'rnd':>3} {'members':>8} {'partitions':>10} {'best':>7} {'median':>7} {'floor':>7} "
          f"{'x floor':>7} {'naive':>7} {'x naive':>7} {'moved':>7} {'bal':>4}  goal")
    ok = True
    for name in args.rows:
        for r in run_row(name, scale, args.repeat):
            naive = f"{r['naive']:7.2f} {r['best'] / r['naive']:7.2f}" if r["naive"] else f"{'-':>7} {'-':>7}"
            met = r["median"] <= GOAL_S
            ok &= met
            print(f"{r['row']:24} {r['round']:>3} {r['members']:>8,} {r['partitions']:>10,} {r['best']:7.2f} "
                  f"{r['median']:7.2f} {r['floor']:7.2f} {r['best'] / r['floor']:7.1f} {naive} {r['moved']:>7,} "
                  f"{r['bal']:>4}  {'met' if met else 'MISSED'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
