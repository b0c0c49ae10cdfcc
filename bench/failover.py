"""Failover under load (issue 14 item 5): coordinators move and brokers stop and start while real consumers commit;
no acknowledged commit may be lost.

``kgroup serve --brokers 3`` runs as its own process. Beside it:

* **committers**: per group, one kafka-python ``KafkaConsumer`` subscribed to the topic (a real member: JoinGroup,
  SyncGroup, heartbeats from its own thread) commits ever-growing offsets for the partitions it owns, with its
  generation, as fast as it can (``commit`` is synchronous: it returns once the coordinator acknowledged, and
  retries on NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS itself; bounded at 10 s, after which it counts as
  failed, i.e. not acknowledged). Each acknowledged commit is recorded;
* **the mover** (fault control, ``client.control``): every ``--interval`` seconds moves one group's coordinator to
  another broker (Kafka: a leader election of its ``__consumer_offsets`` partition: the old coordinator unloads
  the group, the new one loads it from the log), and every 5th action stops broker 1 or 2 (its leaderships move;
  clients connected to it are cut off) and starts it again at the next action;
* the server is started with ``kgroup.coordinator.load.time.ms`` (``--coordinator-load-time-ms``) so that a
  freshly elected coordinator answers COORDINATOR_LOAD_IN_PROGRESS for a while, as Kafka's does while it loads.

At the end every group's committed offsets are read back (kafka-python's admin client): each partition's must
be at least the last acknowledged commit (a commit in flight at a move may land or not; an acknowledged one must
be there). Also reported: the retriable coordinator errors the clients logged (they must have seen some: the
moves were real) and commits that failed for good.

Usage: python bench/failover.py [--seconds 60] [--groups 4] [--interval 0.5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from client.control import ControlClient  # noqa: E402

TOPIC, PARTITIONS = "failover-t", 6


class ErrorCounter(logging.Filter):
    """Counts kafka-python's log records naming a coordinator error (what the clients saw and recovered from).
    A logger filter that drops every record: kafka-python logs these at DEBUG, beside a great many others, and
    handing them all to a handler (its lock, formatting) would slow the clients down more than the faults do."""

    NAMES = ("NotCoordinator", "CoordinatorLoadInProgress", "CoordinatorNotAvailable", "KafkaConnectionError")

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {n: 0 for n in self.NAMES}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.DEBUG and record.args:
            msg = str(record.args[-1]) if record.args else ""
            for n in self.NAMES:
                if n in msg:
                    self.counts[n] += 1
        return False


def committer(bootstrap: str, group: str, stop: threading.Event, acked: dict, failed: list) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      session_timeout_ms=10000, heartbeat_interval_ms=1000, request_timeout_ms=15000,
                      retry_backoff_ms=50)
    n = 0
    while not stop.is_set():
        c.poll(timeout_ms=200)
        tps = sorted(c.assignment())
        if not tps:
            continue
        n += 1
        try:
            c.commit({tp: OffsetAndMetadata(n, "", -1) for tp in tps}, timeout_ms=10000)
        except Exception as e:  # noqa: BLE001 - e.g. CommitFailedError after a rebalance: not acknowledged
            failed.append(f"{group}: {type(e).__name__}: {e}")
            continue
        for tp in tps:
            acked[(group, tp.partition)] = n
    c.close(autocommit=False, timeout_ms=2000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the run (default 60)")
    ap.add_argument("--groups", type=int, default=4, help="groups, one committing member each (default 4)")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between fault actions (default 0.5)")
    ap.add_argument("--load-time-ms", type=int, default=200,
                    help="kgroup.coordinator.load.time.ms of the server (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    errors = ErrorCounter()
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    cl = logging.getLogger("kafka.coordinator.consumer")  # "OffsetCommit for group %s failed: %s" (DEBUG)
    cl.setLevel(logging.DEBUG)
    cl.addFilter(errors)

    work = tempfile.mkdtemp(prefix="kgroup-failover-")
    log_path = os.path.join(work, "server.log")
    with open(log_path, "wb") as server_log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kgroup", "serve", "--brokers", "3", "--port", "0", "--data-dir",
             os.path.join(work, "data"), "--topic", f"{TOPIC}:{PARTITIONS}:3", "--group-initial-rebalance-delay-ms",
             "0", "--coordinator-load-time-ms", str(args.load_time_ms)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=server_log, text=True)
    try:
        return run(args, proc, log_path, errors, rng)
    finally:
        if proc.poll() is None:  # an error on the way: never leave the server behind
            proc.kill()
            proc.wait()


def run(args, proc: subprocess.Popen, log_path: str, errors: ErrorCounter, rng: random.Random) -> int:
    m = re.search(r"bootstrap=(\S+)", proc.stdout.readline())
    if not m:
        print(f"the server did not start: see {log_path}", file=sys.stderr)
        return 1
    bootstrap = m.group(1)
    control = bootstrap.split(",")[0]  # broker 0: never stopped, so the control channel stays up
    groups = [f"failover-g{i}" for i in range(args.groups)]
    stop = threading.Event()
    acked: dict[tuple[str, int], int] = {}
    failed: list[str] = []
    threads = [threading.Thread(target=committer, args=(bootstrap, g, stop, acked, failed), daemon=True)
               for g in groups]
    for t in threads:
        t.start()
    moves = broker_restarts = 0
    stopped: int | None = None
    t0 = time.monotonic()
    deadline = t0 + args.seconds
    with ControlClient(control, timeout=10) as ctl:
        time.sleep(2.0)  # let the groups form
        action = 0
        while time.monotonic() < deadline:
            action += 1
            if stopped is not None:
                ctl.call("start_broker", broker=stopped)
                stopped = None
                broker_restarts += 1
            elif action % 5 == 0:
                stopped = rng.choice([1, 2])
                ctl.call("stop_broker", broker=stopped)
            else:
                g = rng.choice(groups)
                now = ctl.call("coordinator", group=g)
                up = [b for b in (0, 1, 2) if b != now]
                ctl.call("move_coordinator", group=g, broker=rng.choice(up))
                moves += 1
            print(f"\r{time.monotonic() - t0:5.1f}s  moves {moves}  broker restarts {broker_restarts}  "
                  f"acked commits by group {[max((n for (g, _), n in acked.items() if g == gg), default=0) for gg in groups]}  "
                  f"failed {len(failed)}  errors seen {sum(errors.counts.values())}",
                  end="", file=sys.stderr, flush=True)
            time.sleep(args.interval)
        if stopped is not None:
            ctl.call("start_broker", broker=stopped)
            broker_restarts += 1
    stop.set()
    for t in threads:
        t.join(30)
    print(file=sys.stderr)

    from kafka import KafkaAdminClient, TopicPartition
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    lost = []
    for g in groups:
        got = admin.list_group_offsets({g: None})[g]
        for (gg, p), n in sorted(acked.items()):
            if gg != g:
                continue
            om = got.get(TopicPartition(TOPIC, p))
            if om is None or om.offset < n:
                lost.append((g, p, n, None if om is None else om.offset))
    admin.close()
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=30)
    with open(log_path, errors="replace") as f:
        tracebacks = f.read().count("Traceback")
    total_acked = sum(acked.values())
    report = {"seconds": args.seconds, "groups": args.groups, "coordinator_moves": moves,
              "broker_restarts": broker_restarts, "acked_partition_commits": total_acked,
              "partitions_checked": len(acked), "commits_lost": len(lost), "commits_failed": len(failed),
              "failed_examples": failed[:3], "client_saw": errors.counts, "server_tracebacks": tracebacks,
              "server_exit_code": rc}
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    for x in lost[:10]:
        print(f"LOST: {x}", file=sys.stderr)
    ok = not lost and tracebacks == 0 and rc == 0 and total_acked > 0 and moves > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
