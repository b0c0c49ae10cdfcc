"""Crash safety with real processes (issue 14 item 4): ``kgroup serve --data-dir`` killed with SIGKILL during
commit and produce storms from kafka-python keeps everything it acknowledged (bench/crash.py, 2 rounds here; the
100-round figure is in docs/benchmarks.md), and a killed server whose logs then lose their last bytes reports the
damaged file and loads everything before it."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_crash", os.path.join(ROOT, "bench", "crash.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sigkill_rounds_lose_no_acknowledged_commit_or_record(tmp_path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "crash.py"), "--rounds", "2", "--seed", "3",
                           "--json", str(out)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(out.read_text())
    assert rep["acked_records"] > 0 and rep["acked_commit_requests"] > 0  # the storm ran: something was checked
    assert rep["records_lost"] == 0 and rep["commits_lost"] == 0 and rep["tracebacks"] == 0


def test_damaged_tails_after_a_kill_are_reported_and_the_rest_loads(tmp_path) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    b = _bench()
    data = str(tmp_path / "data")
    srv = b.Server(data, "batch", str(tmp_path / "server1.log"))
    tp = TopicPartition(b.TOPIC, 0)
    p = KafkaProducer(bootstrap_servers=srv.bootstrap, acks="all")
    for i in range(5):
        p.send(b.TOPIC, value=f"v{i}".encode(), partition=0).get(timeout=10)
    p.close()
    c = KafkaConsumer(bootstrap_servers=srv.bootstrap, group_id="torn-g", enable_auto_commit=False)
    c.assign([tp])
    for n in range(1, 6):
        c.commit({tp: OffsetAndMetadata(n, "", -1)})
    c.close()
    srv.kill()

    # the kill cut the last writes short: 10 bytes off the offsets line of commit 5, the last byte of the topic
    # log's last batch (record v4) flipped
    offsets_file = max(glob.glob(os.path.join(data, "__consumer_offsets-*.jsonl")), key=os.path.getmtime)
    with open(offsets_file, "r+b") as f:
        f.truncate(os.path.getsize(offsets_file) - 10)
    topic_file = os.path.join(data, "topics", f"{b.TOPIC}-0.log")
    with open(topic_file, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))

    srv = b.Server(data, "batch", str(tmp_path / "server2.log"))  # never a refusal to start
    try:
        a = KafkaAdminClient(bootstrap_servers=srv.bootstrap)
        assert a.list_group_offsets({"torn-g": None})["torn-g"][tp].offset == 4  # commit 5 was the torn line
        a.close()
        c = KafkaConsumer(bootstrap_servers=srv.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
        c.assign([tp])
        c.seek_to_beginning(tp)
        assert [m.value for m in c] == [b"v0", b"v1", b"v2", b"v3"]  # the corrupt last batch cut off, no more
        c.close()
    finally:
        assert srv.stop() == 0
    log = (tmp_path / "server2.log").read_text()
    assert "Traceback" not in log
    warnings = [ln for ln in log.splitlines() if "WARNING" in ln]
    assert any(offsets_file in ln and "at byte" in ln for ln in warnings), log
    assert any(topic_file in ln and "at byte" in ln for ln in warnings), log
