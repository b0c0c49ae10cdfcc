"""`kgroup watch`: poll any Kafka cluster's consumer groups and write what was seen as observed event records
(kgroup/watch.py; docs/events.md), which ``kgroup analyze DIR`` turns into the rebalance timeline and report.

    kgroup watch --bootstrap 127.0.0.1:9092 --out watch-out [--group G ...] [--interval-ms 1000] [--duration-s 60]

Writes ``DIR/events.jsonl`` (observed records), ``DIR/produce.jsonl`` (log end offsets, for the lag chart) and
``DIR/watch.json`` (what was watched, how often, what was seen). Prints one line per observed change. Stops after
``--duration-s`` or on Ctrl-C/SIGTERM (exit 0). Exit codes: 0 done, 1 the cluster could not be reached at the
start, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="poll any Kafka cluster's groups and record what it saw (observed records for "
                                     "`kgroup analyze`)",
                       description="Poll a Kafka cluster (kgroup serve or real brokers) with Kafka's APIs only "
                                   "(ListGroups, DescribeGroups, ConsumerGroupDescribe when offered, OffsetFetch, "
                                   "ListOffsets) and write the observed changes -- new generations, members in and "
                                   "out, assignment moves, committed offsets and lag -- as event records that "
                                   "`kgroup analyze DIR` reads. Exit codes: 0 done, 1 unreachable at the start, 2 "
                                   "usage (a bad flag, or an --out that is not a writable directory).")
    p.add_argument("--bootstrap", "--bootstrap-server", dest="bootstrap", default="127.0.0.1:9092",
                   metavar="HOST:PORT[,...]", help="the cluster (default 127.0.0.1:9092)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP",
                   help="watch this group (repeatable; default: every consumer group, listed at each poll)")
    p.add_argument("--out", required=True, metavar="DIR", help="where to write events.jsonl, produce.jsonl, watch.json")
    p.add_argument("--interval-ms", type=int, default=1000, metavar="MS",
                   help="time between polls (default 1000; a rebalance shorter than this may be missed)")
    p.add_argument("--duration-s", type=float, default=None, metavar="S", help="stop after S seconds (default: "
                                                                               "until Ctrl-C)")
    p.add_argument("--timeout", type=int, default=10000, metavar="MS", help="timeout of each request (default 10000)")
    p.add_argument("--no-lag", action="store_true", help="do not read committed and log end offsets (fewer requests)")
    p.add_argument("--quiet", action="store_true", help="print nothing while watching")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    if args.interval_ms < 10:
        print(f"kgroup watch: --interval-ms must be >= 10 (got {args.interval_ms})", file=sys.stderr)
        return 2
    if args.duration_s is not None and args.duration_s <= 0:
        print(f"kgroup watch: --duration-s must be > 0 (got {args.duration_s})", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print(f"kgroup watch: --timeout must be > 0 (got {args.timeout})", file=sys.stderr)
        return 2
    try:
        from client.admin import _bootstrap
        _bootstrap(args.bootstrap)
    except ValueError as e:
        print(f"kgroup watch: --bootstrap: {e}", file=sys.stderr)
        return 2
    problem = _out_dir_problem(args.out)
    if problem is not None:  # before connecting: nothing is watched that cannot be written
        print(f"kgroup watch: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(watch(args.bootstrap, args.out, groups=args.group, interval_ms=args.interval_ms,
                                 duration_s=args.duration_s, timeout_ms=args.timeout, lag=not args.no_lag,
                                 echo=None if args.quiet else print))
    except KeyboardInterrupt:
        return 0


def _out_dir_problem(path: str) -> str | None:
    """Why ``path`` cannot be the output directory (created if missing), or None."""
    import os
    if os.path.exists(path) and not os.path.isdir(path):
        return "not a directory"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        return f"cannot create it: {e.strerror or e}"
    if not os.access(path, os.W_OK | os.X_OK):
        return "not writable"
    return None


async def watch(bootstrap: str, out_dir: str, *, groups: list[str] | None = None, interval_ms: int = 1000,
                duration_s: float | None = None, timeout_ms: int = 10000, lag: bool = True, echo: Any = None,
                stop: Any = None) -> int:
    """Poll until ``duration_s`` has passed or ``stop`` (an asyncio.Event) is set; returns the exit code."""
    import asyncio
    import json
    import os
    import signal

    from client.admin import AdminClient, AdminError
    from kgroup.watch import GroupTracker, ObservedLog, poll_group

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread: the caller stops us
            pass
    admin = AdminClient(bootstrap, client_id="kgroup-watch", timeout=timeout_ms / 1000)
    try:
        await admin.refresh()
    except (ConnectionError, OSError, asyncio.TimeoutError) as e:
        print(f"kgroup watch: cannot reach {bootstrap}: {e}", file=sys.stderr)
        await admin.close()
        return 1
    olog = ObservedLog(out_dir)
    trackers: dict[str, GroupTracker] = {}
    started = time.time()
    polls = errors = 0
    last_error = ""
    skipped: dict[str, str] = {}
    deadline = None if duration_s is None else loop.time() + duration_s
    try:
        while not stop.is_set():
            t0 = loop.time()
            now_ms = int(time.time() * 1000)
            try:
                names = list(groups) if groups else [g.group_id for g in await admin.list_groups()]
                names = sorted(set(names) | set(trackers))
                all_ends: dict = {}
                for g in names:
                    try:
                        view = await poll_group(admin, g, lag)
                    except AdminError as e:  # this group only (e.g. not a consumer group): say so once, go on
                        if skipped.get(g) != str(e):
                            print(f"kgroup watch: group {g}: {e}", file=sys.stderr)
                            skipped[g] = str(e)
                        continue
                    tr = trackers.get(g)
                    if tr is None:  # listed after the first poll: it appeared while we watched
                        tr = trackers[g] = GroupTracker(g, absent_before=polls > 0 and not groups)
                    records = tr.observe(now_ms, view)
                    olog.write(now_ms, records)
                    if view is not None:
                        all_ends.update({k: v for k, v in view.ends.items() if v is not None})
                    if echo is not None:
                        for typ, data in records:
                            line = _describe(typ, data)
                            if line:
                                echo(f"[{time.strftime('%H:%M:%S', time.localtime(now_ms / 1000))}."
                                     f"{now_ms % 1000:03d}] {g}: {line}")
                olog.write_ends(now_ms, all_ends)
                polls += 1
            except (AdminError, ConnectionError, OSError, asyncio.TimeoutError) as e:
                errors += 1
                if str(e) != last_error:  # one line per kind of trouble, not one per poll
                    print(f"kgroup watch: poll failed: {e}", file=sys.stderr)
                    last_error = str(e)
                await admin.close()
                admin = AdminClient(bootstrap, client_id="kgroup-watch", timeout=timeout_ms / 1000)
            if deadline is not None and loop.time() >= deadline:
                break
            wait = interval_ms / 1000 - (loop.time() - t0)
            if deadline is not None:
                wait = min(wait, deadline - loop.time())
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, wait))
            except asyncio.TimeoutError:
                pass
    finally:
        await admin.close()
        olog.close()
        summary = {"bootstrap": bootstrap, "groups": sorted(trackers), "interval_ms": interval_ms,
                   "started_ms": int(started * 1000), "ended_ms": int(time.time() * 1000), "polls": polls,
                   "failed_polls": errors, "records": olog.counts}
        with open(os.path.join(out_dir, "watch.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
        if echo is not None:
            seen = olog.counts
            echo(f"kgroup watch: {polls} polls of {len(trackers)} group(s); {seen.get('ObservedGeneration', 0)} "
                 f"generation(s), {seen.get('ObservedRebalance', 0)} rebalance(s) observed; records in "
                 f"{os.path.join(out_dir, 'events.jsonl')} (kgroup analyze {out_dir})")
    return 0


def _describe(typ: str, d: dict) -> str:
    if typ == "ObservedGeneration":
        who = ", ".join(f"{m['client_id'] or m['member_id']}<-{_parts(m['partitions'])}" for m in d["members"])
        moved = f"; {len(d['moved'])} partition(s) moved" if d["moved"] else ""
        if d.get("group_type") == "consumer":  # KIP-848: the group epoch every member reconciled to
            return (f"group epoch {d['generation_id']} (consumer group, {d['protocol_name']}, target assignment epoch "
                    f"{d['assignment_epoch']}): {who}{moved}")
        return f"generation {d['generation_id']} ({d['protocol_name']}): {who}{moved}"
    if typ == "ObservedRebalance":
        return f"rebalance ({d['reason']})"
    if typ == "ObservedEmpty":
        return "Empty"
    if typ == "ObservedGroupGone":
        return "gone"
    return ""


def _parts(parts: list) -> str:
    by: dict[str, list[int]] = {}
    for t, p in parts:
        by.setdefault(t, []).append(p)
    return " ".join(f"{t}-{sorted(ps)}".replace(" ", "") for t, ps in sorted(by.items())) or "(none)"
