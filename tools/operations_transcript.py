"""The real output shown in docs/operations.md, from one run (prints a transcript to stdout):

    .venv/bin/python tools/operations_transcript.py > /tmp/transcript.txt

``kgroup serve`` (a subprocess, its coordinator log captured) with the web view; a producer; a ``kgroup watch``
subprocess; two kafka-python consumers of group ``billing`` that commit part of what was produced; every
``kgroup groups`` view; one consumer leaves, then the other; resets, offset deletion, group deletion; the watch's
output and records; the coordinator's log.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")


class Member(threading.Thread):
    """A kafka-python consumer polling in its own thread; ``commit`` runs in that thread."""

    def __init__(self, bootstrap: str, name: str) -> None:
        super().__init__(daemon=True)
        from kafka import KafkaConsumer
        self.c = KafkaConsumer("invoices", bootstrap_servers=bootstrap, group_id="billing", client_id=name,
                               enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                               heartbeat_interval_ms=1000)
        self.calls: queue.Queue = queue.Queue()
        self.stopping = False
        self.start()

    def run(self) -> None:
        while not self.stopping:
            self.c.poll(300)
            while not self.calls.empty():
                fn, done = self.calls.get()
                done.put(fn(self.c))
        self.c.close()

    def do(self, fn):
        done: queue.Queue = queue.Queue()
        self.calls.put((fn, done))
        return done.get(timeout=30)


def sh(*args: str) -> None:
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    r = subprocess.run([PY, "-m", "kgroup", *args], capture_output=True, text=True, env=ENV, cwd=ROOT)
    print(f"$ kgroup {shown}")
    out = (r.stdout + ("" if not r.stderr else r.stderr)).rstrip("\n")
    print(out)
    print(f"# exit {r.returncode}\n")


def main() -> int:
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    tmp = Path(tempfile.mkdtemp(prefix="kgroup-ops-"))
    serve = subprocess.Popen([PY, "-m", "kgroup", "serve", "--port", "0", "--topic", "invoices:4",
                              "--group-initial-rebalance-delay-ms", "0", "--ui", "0"], stdout=subprocess.PIPE,
                             stderr=open(tmp / "serve.log", "w"), text=True, env=ENV, cwd=ROOT)
    boot = serve.stdout.readline().strip().split("=", 1)[1]
    ui = serve.stdout.readline().strip()
    print(f"# kgroup serve: bootstrap={boot}; {ui}\n")
    first = boot.split(",")[0]
    p = KafkaProducer(bootstrap_servers=boot)
    for i, n in enumerate((120, 90, 75, 60)):
        for k in range(n):
            p.send("invoices", key=f"k{k}".encode(), value=b"x", partition=i)
    p.flush()
    watch = subprocess.Popen([PY, "-m", "kgroup", "watch", "--bootstrap", first, "--group", "billing", "--out",
                              str(tmp / "watch"), "--interval-ms", "200"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=ENV, cwd=ROOT)
    time.sleep(1)
    a = Member(boot, "billing-a")
    time.sleep(2)
    b = Member(boot, "billing-b")
    time.sleep(4)
    done = {0: 100, 1: 90, 2: 40}       # "consumed part": what each partition's owner commits
    for m in (a, b):
        def commit(c):
            mine = {tp: OffsetAndMetadata(done[tp.partition], "", -1) for tp in c.assignment() if tp.partition in done}
            if mine:
                c.commit(mine)
        m.do(commit)
    time.sleep(1)
    sh("groups", "--bootstrap-server", first, "--list")
    sh("groups", "--bootstrap-server", first, "--list", "--state")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--verbose")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--members")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--members", "--verbose")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--state")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--state", "--verbose")
    sh("groups", "--bootstrap-server", first, "--reset-offsets", "--group", "billing", "--all-topics",
       "--to-earliest")
    a.stopping = True
    a.join(30)
    time.sleep(3)
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--members")
    b.stopping = True
    b.join(30)
    time.sleep(2)
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing")
    sh("groups", "--bootstrap-server", first, "--reset-offsets", "--group", "billing", "--topic", "invoices:0,1",
       "--to-offset", "50", "--dry-run")
    sh("groups", "--bootstrap-server", first, "--reset-offsets", "--group", "billing", "--all-topics",
       "--shift-by", "-500", "--execute")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing", "--json")
    sh("groups", "--bootstrap-server", first, "--delete-offsets", "--group", "billing", "--topic", "invoices:2")
    sh("groups", "--bootstrap-server", first, "--delete", "--group", "billing")
    sh("groups", "--bootstrap-server", first, "--describe", "--group", "billing")
    time.sleep(1)
    watch.send_signal(signal.SIGINT)
    wout, _ = watch.communicate(timeout=30)
    print("# kgroup watch --bootstrap ... --group billing --out watch --interval-ms 200")
    print(wout.rstrip())
    print("\n# watch/events.jsonl (first lines)")
    for line in (tmp / "watch" / "events.jsonl").read_text().splitlines()[:6]:
        print(line)
    print("\n# watch/watch.json")
    print((tmp / "watch" / "watch.json").read_text())
    serve.send_signal(signal.SIGTERM)
    serve.wait(30)
    print("# kgroup serve's coordinator log (stderr), group billing and loads")
    for line in (tmp / "serve.log").read_text().splitlines():
        if "billing" in line or "shut down" in line or "serving" in line or "active" in line:
            print(line)
    print(f"\n# files in {tmp}")
    print(json.dumps(sorted(os.listdir(tmp / "watch"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
