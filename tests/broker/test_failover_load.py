"""Failover under load (issue 14 item 5, bench/failover.py for 8 s here; the longer figure is in
docs/benchmarks.md): coordinators move and brokers stop and start while kafka-python members commit; every
acknowledged commit is read back, and the clients saw Kafka's coordinator errors and recovered."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_coordinator_moves_and_broker_restarts_lose_no_acknowledged_commit(tmp_path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "failover.py"), "--seconds", "8",
                           "--groups", "2", "--interval", "0.4", "--json", str(out)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(out.read_text())
    assert rep["coordinator_moves"] >= 5 and rep["broker_restarts"] >= 1
    assert rep["acked_partition_commits"] > 0 and rep["partitions_checked"] > 0
    assert rep["commits_lost"] == 0 and rep["server_tracebacks"] == 0
    # the moves were seen by the clients: Kafka's retriable coordinator errors, then success
    saw = rep["client_saw"]
    assert saw["NotCoordinator"] + saw["CoordinatorLoadInProgress"] > 0, saw
