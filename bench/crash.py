"""Crash safety of ``kgroup serve --data-dir`` (issue 14 item 4): SIGKILL at random moments during commit and
produce storms from real clients, then check that everything acknowledged survived the restart.

Each round:

1. start ``kgroup serve --brokers 3 --port 0 --data-dir DIR --fsync POLICY`` on the data directory the previous
   rounds left (its stderr kept: recovery warnings are counted, a traceback is a failure);
2. **verify** what every earlier round had acknowledged, with kafka-python as the independent reader: each
   acknowledged record (``acks=all``: topic, partition, offset, value) must be read back at its offset with its
   value (``KafkaConsumer`` from the beginning of every partition), and each group's committed offset of each
   partition must be at least the last commit that was acknowledged (``KafkaAdminClient.
   list_group_offsets``; a commit in flight at the kill may or may not have landed, so later is fine,
   earlier is a loss);
3. start the **storm**: a separate process (``--client``) runs kafka-python producers (``acks=all``, one
   record in flight per producer, no retries: an acknowledgement is exactly one stored record) and committers
   (``KafkaConsumer.commit`` of ever-growing offsets for 4 partitions, one simple group each), and prints one
   JSON line per acknowledgement, *after* the client got it;
4. **SIGKILL** the server after a random 0.2-2.5 s of storm, give the client 0.3 s to print acknowledgements
   already in its sockets (those were acknowledged before the kill), then SIGKILL the client too.

The final round only verifies. Figures printed: rounds, acknowledged records and commits checked, losses
(must be 0), recovery warnings (a torn tail at the kill is expected now and then: reported, dropped, never a
refusal to start), tracebacks (must be 0), restart time.

Usage: python bench/crash.py [--rounds 100] [--fsync batch] [--seed 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TOPIC, PARTITIONS = "crash-t", 4
GROUPS = ("crash-g0", "crash-g1")
PRODUCERS = 3


# --- the client process (the storm) ----------------------------------------------------------------------------

def client_main(bootstrap: str, round_no: int) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    lock = threading.Lock()

    def emit(obj: dict) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    def produce(i: int) -> None:
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=0, linger_ms=0,
                          max_in_flight_requests_per_connection=1, enable_idempotence=False,
                          request_timeout_ms=5000)
        seq = 0
        while True:
            value = f"r{round_no}-p{i}-{seq}"
            try:
                md = p.send(TOPIC, value=value.encode(), partition=seq % PARTITIONS).get(timeout=10)
            except Exception:  # noqa: BLE001 - the server died: nothing more is acknowledged
                return
            emit({"k": "rec", "p": md.partition, "o": md.offset, "v": value})
            seq += 1

    def commit(gi: int) -> None:
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUPS[gi], enable_auto_commit=False,
                          request_timeout_ms=5000)
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        c.assign(tps)
        n = round_no * 1_000_000
        while True:
            n += 1
            try:
                c.commit({tp: OffsetAndMetadata(n + tp.partition, f"round {round_no}", -1) for tp in tps})
            except Exception:  # noqa: BLE001
                return
            emit({"k": "commit", "g": GROUPS[gi], "o": n})

    threads = [threading.Thread(target=produce, args=(i,), daemon=True) for i in range(PRODUCERS)]
    threads += [threading.Thread(target=commit, args=(g,), daemon=True) for g in range(len(GROUPS))]
    for t in threads:
        t.start()
    emit({"k": "ready"})
    for t in threads:
        t.join()


# --- the driver ------------------------------------------------------------------------------------------------

class Server:
    def __init__(self, data_dir: str, fsync: str, log_path: str) -> None:
        self.log = open(log_path, "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kgroup", "serve", "--brokers", "3", "--port", "0", "--data-dir", data_dir,
             "--fsync", fsync, "--topic", f"{TOPIC}:{PARTITIONS}:3", "--group-initial-rebalance-delay-ms", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"bootstrap=(\S+)", line)
        if not m:
            raise SystemExit(f"the server did not start (see {log_path}): {line!r}")
        self.bootstrap = m.group(1)
        self.start_s = time.monotonic() - t0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.log.close()
        return rc


def verify(bootstrap: str, records: dict[tuple[int, int], str], commits: dict[str, int]) -> dict:
    """What was acknowledged, read back by kafka-python: (lost records, lost commits, records read)."""
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    lost_records, lost_commits = [], []
    if records:
        c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                          consumer_timeout_ms=3000, auto_offset_reset="earliest", max_poll_records=5000)
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        end = c.end_offsets(tps)
        seen: dict[tuple[int, int], str] = {}
        deadline = time.monotonic() + 60
        while any(c.position(tp) < end[tp] for tp in tps) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=1000).items():
                for m in msgs:
                    seen[(tp.partition, m.offset)] = m.value.decode(errors="replace")
        c.close()
        lost_records = [(k, v, seen.get(k)) for k, v in records.items() if seen.get(k) != v]
    if commits:
        a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        for g, n in commits.items():
            got = a.list_group_offsets({g: None})[g]  # OffsetFetch, kafka-python's decoder
            for p in range(PARTITIONS):
                om = got.get(TopicPartition(TOPIC, p))
                if om is None or om.offset < n + p:
                    lost_commits.append((g, p, n + p, None if om is None else om.offset))
        a.close()
    return {"lost_records": lost_records, "lost_commits": lost_commits}


def storm(bootstrap: str, round_no: int, rng: random.Random, server: Server,
          records: dict, commits: dict, client_log) -> tuple[int, int, float]:
    client = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", bootstrap, str(round_no)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=client_log, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def reader() -> None:
        for line in client.stdout:
            if '"ready"' in line:
                ready.set()
            lines.append(line)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    ready.wait(30)
    # let the clients connect and get going, then kill at a random moment of the storm
    delay = rng.uniform(0.2, 2.5)
    time.sleep(1.0 + delay)
    server.kill()
    time.sleep(0.3)  # acknowledgements already in the client's sockets were given before the kill
    client.send_signal(signal.SIGKILL)
    client.wait()
    t.join(5)
    n_rec = n_commit = 0
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # a line cut by the client's kill
        if ev["k"] == "rec":
            records[(ev["p"], ev["o"])] = ev["v"]
            n_rec += 1
        elif ev["k"] == "commit":
            commits[ev["g"]] = max(commits.get(ev["g"], 0), ev["o"])
            n_commit += 1
    return n_rec, n_commit, delay


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100, help="SIGKILL rounds (default 100)")
    ap.add_argument("--fsync", choices=("batch", "never", "always"), default="batch",
                    help="the server's --fsync policy (default batch)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the data directory and logs")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="kgroup-crash-")
    data_dir, log_path = os.path.join(work, "data"), os.path.join(work, "server.log")
    records: dict[tuple[int, int], str] = {}
    commits: dict[str, int] = {}
    acked_records = acked_commits = 0
    losses_records = losses_commits = 0
    starts: list[float] = []
    t0 = time.monotonic()
    for r in range(args.rounds + 1):
        server = Server(data_dir, args.fsync, log_path)
        starts.append(server.start_s)
        v = verify(server.bootstrap, records, commits)
        losses_records += len(v["lost_records"])
        losses_commits += len(v["lost_commits"])
        for lost in v["lost_records"][:5] + v["lost_commits"][:5]:
            print(f"  LOST after round {r}: {lost}", file=sys.stderr)
        if r == args.rounds:
            rc = server.stop()
            break
        with open(os.path.join(work, "client.log"), "ab") as client_log:
            n_rec, n_commit, delay = storm(server.bootstrap, r + 1, rng, server, records, commits, client_log)
        acked_records += n_rec
        acked_commits += n_commit
        print(f"round {r + 1:3}/{args.rounds}: killed after {1.0 + delay:.2f} s; acknowledged {n_rec} records, "
              f"{n_commit} commits; so far lost {losses_records} records, {losses_commits} commits; "
              f"restart {server.start_s:.2f} s", file=sys.stderr, flush=True)
    with open(log_path, errors="replace") as f:
        log = f.read()
    tracebacks = log.count("Traceback")
    recovery = len(re.findall(r"(?m)WARNING .*(torn|corrupt|CRC|dropped|cut)", log))
    report = {"rounds": args.rounds, "fsync": args.fsync, "acked_records": acked_records,
              "acked_commit_requests": acked_commits, "distinct_records_checked": len(records),
              "records_lost": losses_records, "commits_lost": losses_commits, "tracebacks": tracebacks,
              "recovery_warnings": recovery, "final_exit_code": rc,
              "restart_s_median": sorted(starts)[len(starts) // 2], "restart_s_max": max(starts),
              "seconds": round(time.monotonic() - t0, 1)}
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.keep:
        print(f"kept {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    # a round that acknowledged nothing checks nothing: the storm must have run
    ok = losses_records == 0 and losses_commits == 0 and tracebacks == 0 and rc == 0 and acked_records > 0 \
        and acked_commits > 0
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--client":
        client_main(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
