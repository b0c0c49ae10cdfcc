"""A real `kgroup serve --data-dir`: two members form a group over TCP, one commits, one leaves, the other
rejoins; `kgroup analyze` of the data directory reads the server's own __consumer_offsets-<p>.jsonl log."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).parents[1] / "broker"))


async def _group_life(data_dir: Path) -> tuple[str, str]:
    from protocol.errors import ErrorCode as E
    from broker_harness import form_group, make_settings, round_robin, start_server
    srv = await start_server(make_settings(data_dir=str(data_dir), group_initial_rebalance_delay_ms=300))
    members = []
    try:
        members = await form_group(srv, "billing", 2)
        stay, leave = members
        # own the partitions for a measurable time: the records carry wall-clock milliseconds, and an ownership
        # that starts and ends in the same millisecond is an empty interval (no row), which a fast machine produced
        await asyncio.sleep(0.05)
        assert (await stay.commit({0: 5})).topics[0].partitions[0].error_code == 0
        assert (await leave.leave()).error_code == 0
        assert await stay.heartbeat() == E.REBALANCE_IN_PROGRESS
        assert (await stay.join()).error_code == E.NONE
        assert (await stay.sync(round_robin([stay.member_id], "orders", 6))).error_code == E.NONE
        return stay.member_id, leave.member_id
    finally:
        for m in members:
            await m.close()
        await srv.close()


def test_analyze_reads_a_real_servers_data_dir(spark, tmp_path):
    from analysis.analyze import run_analysis
    stay, left = asyncio.run(_group_life(tmp_path / "data"))
    logs = sorted(p.name for p in (tmp_path / "data").glob("__consumer_offsets-*.jsonl"))
    assert logs and all(name.startswith("__") for name in logs)      # names Spark would hide
    res = run_analysis([str(tmp_path / "data")], tmp_path / "out", spark=spark, export_events=False)
    (g,) = res.data["groups"]
    # the group's start (from Empty), then the LeaveGroup rebalance; 6 partitions, two owners ever
    assert (g["group_id"], g["protocol"], g["assignor"], g["rebalances"], g["from_empty"], g["members"],
            g["partitions"]) == ("billing", "eager", "range", 2, 1, 2, 6)
    second = [r for r in res.data["rebalances"] if r["rebalance_no"] == 2][0]
    # round-robin gave each member 3 partitions; the leaver's 3 move to the member that stays
    assert (second["trigger"], second["members_before"], second["members_after"], second["partitions_moved"]) == \
        ("member-left", 2, 1, 3)
    owners = {o["owner"] for o in res.data["ownership"]}
    assert owners == {stay, left}
    (info,) = res.data["runs"].values()
    assert info["wall_clock"]                      # epoch milliseconds: the report counts from the first record
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "wall-clock start" in html and ">0 ms</text>" in html
