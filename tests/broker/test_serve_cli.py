"""`kgroup serve` as a process: flags, the ready line, SIGTERM/SIGINT shutdown, restart with --data-dir."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from kgroup.cli import main
from client.wire import WireClient
from protocol.messages import FindCoordinatorRequest, OffsetCommitRequest
from broker_harness import TIMEOUT, fetch_offsets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("argv, flag", [
    (["--group-min-session-timeout-ms", "10", "--group-max-session-timeout-ms", "5"],
     "--group-max-session-timeout-ms"),
    (["--group-max-size", "0"], "--group-max-size"),
    (["--offsets-topic-num-partitions", "0"], "--offsets-topic-num-partitions"),
    (["--offsets-retention-minutes", "0"], "--offsets-retention-minutes"),
    (["--group-initial-rebalance-delay-ms", "-1"], "--group-initial-rebalance-delay-ms"),
    (["--brokers", "0"], "--brokers"),
    (["--brokers", "2", "--offsets-topic-replication-factor", "3"], "--offsets-topic-replication-factor"),
    (["--port", "70000"], "--port"),
    (["--max-request-bytes", "0"], "--max-request-bytes"),
    (["--topic", "orders"], "--topic"),
    (["--topic", "orders:x"], "--topic"),
    (["--topic", "bad/name:3"], "--topic"),
    (["--topic", "a:1", "--topic", "a:2"], "--topic"),
])
def test_invalid_flags_exit_2_naming_the_flag(argv, flag, capsys) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert flag in err, err


async def _start(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "kgroup", "serve", "--port", "0", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env, cwd=ROOT)
    line = (await asyncio.wait_for(proc.stdout.readline(), 15)).decode()
    assert line.startswith("kgroup serving bootstrap="), line + (await proc.stderr.read()).decode()
    return proc, line.strip().split("=", 1)[1]


async def _stop(proc: asyncio.subprocess.Process, sig: int) -> None:
    proc.send_signal(sig)
    rc = await asyncio.wait_for(proc.wait(), TIMEOUT)
    err = (await proc.stderr.read()).decode()
    assert rc == 0, err
    assert "shut down" in err and "Traceback" not in err


async def _coordinator(bootstrap: str, group: str) -> WireClient:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    c = await WireClient.connect(host, int(port), timeout=TIMEOUT)
    r = await c.call(FindCoordinatorRequest(key=group, key_type=0), 3, timeout=TIMEOUT)
    await c.close()
    assert r.error_code == 0
    return await WireClient.connect(r.host, r.port, timeout=TIMEOUT)


async def test_serve_process_restart_with_data_dir_keeps_offsets(tmp_path) -> None:
    flags = ["--data-dir", str(tmp_path), "--topic", "orders:4", "--brokers", "3"]
    proc, bootstrap = await _start(*flags)
    try:
        assert len(bootstrap.split(",")) == 3
        c = await _coordinator(bootstrap, "cli-group")
        T = OffsetCommitRequest.Topic
        r = await c.call(OffsetCommitRequest(group_id="cli-group", generation_id_or_member_epoch=-1, member_id="",
                                             topics=[T(name="orders", partitions=[
                                                 T.Partition(partition_index=3, committed_offset=33)])]), 8,
                         timeout=TIMEOUT)
        assert r.topics[0].partitions[0].error_code == 0
        await c.close()
    finally:
        await _stop(proc, signal.SIGTERM)
    proc, bootstrap = await _start(*flags)
    try:
        c = await _coordinator(bootstrap, "cli-group")
        err, offsets = await fetch_offsets(c, "cli-group", "orders", [3, 0])
        assert err == 0 and offsets == {3: 33, 0: -1}
        await c.close()
    finally:
        await _stop(proc, signal.SIGINT)


async def test_serve_logs_the_coordinator_as_json_lines() -> None:
    """`--log-format json`: every stderr line is a JSON object; a JoinGroup (v3: no MEMBER_ID_REQUIRED) logs the
    member joining and the rebalance it starts, with their fields (broker/grouplog.py)."""
    from protocol.messages import JoinGroupRequest
    proc, bootstrap = await _start("--log-format", "json", "--group-initial-rebalance-delay-ms", "100",
                                   "--topic", "orders:2")
    try:
        c = await _coordinator(bootstrap, "json-group")
        r = await c.call(JoinGroupRequest(group_id="json-group", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                          member_id="", protocol_type="consumer", protocols=[
                                              JoinGroupRequest.Protocol(name="range", metadata=b"")]), 3,
                         timeout=TIMEOUT)
        assert r.error_code == 0
        await c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), TIMEOUT)
    lines = [json.loads(line) for line in (await proc.stderr.read()).decode().splitlines()
             if line.startswith("{")]
    events = [d for d in lines if d.get("group_id") == "json-group"]
    assert [d["event"] for d in events][:4] == ["member_joined", "rebalance_started", "generation_completed",
                                                "generation_detail"]
    joined = events[0]
    assert joined["member_id"] == r.member_id and joined["logger"].endswith("GroupMetadataManager")
    assert events[1]["reason"].startswith(f"Adding new member {r.member_id}")
    assert events[2]["message"].endswith("Stabilized group json-group generation 1 with 1 members.")
