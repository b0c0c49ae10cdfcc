"""`kgroup analyze` of a `kgroup watch` directory (observed records, docs/events.md) next to the coordinator's own
log of the same group (`kgroup serve --data-dir`): the same rebalances, moves, owners and lag chart, from a
watcher's polls of Kafka's APIs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).parents[1] / "broker"))


async def _watched_group_life(data_dir: Path, watch_dir: Path) -> None:
    from protocol.errors import ErrorCode as E
    from broker_harness import form_group, make_settings, round_robin, start_server
    from kgroup.cmd_watch import watch
    srv = await start_server(make_settings(data_dir=str(data_dir), group_initial_rebalance_delay_ms=300))
    stop = asyncio.Event()
    watcher = asyncio.ensure_future(watch(srv.bootstrap, str(watch_dir), groups=["billing"], interval_ms=50,
                                          stop=stop))
    members = []
    try:
        await asyncio.sleep(0.2)
        members = await form_group(srv, "billing", 2)
        stay, leave = members
        await asyncio.sleep(0.4)
        assert (await stay.commit({0: 5, 1: 2})).topics[0].partitions[0].error_code == 0
        await asyncio.sleep(0.3)
        assert (await leave.leave()).error_code == 0
        assert await stay.heartbeat() == E.REBALANCE_IN_PROGRESS
        assert (await stay.join()).error_code == E.NONE
        assert (await stay.sync(round_robin([stay.member_id], "orders", 6))).error_code == E.NONE
        await asyncio.sleep(0.4)
        assert (await stay.commit({0: 9})).topics[0].partitions[0].error_code == 0
        await asyncio.sleep(0.3)
    finally:
        stop.set()
        assert await asyncio.wait_for(watcher, 10) == 0
        for m in members:
            await m.close()
        await srv.close()


def test_analyze_a_watch_directory_like_the_coordinators_log(spark, tmp_path):
    from analysis.analyze import run_analysis
    asyncio.run(_watched_group_life(tmp_path / "data", tmp_path / "watch"))
    res = run_analysis([str(tmp_path / "data"), str(tmp_path / "watch")], tmp_path / "out", spark=spark,
                       export_events=False)
    runs = {r["run"]: r for r in res.data["groups"]}
    served, watched = runs[str(tmp_path / "data")], runs[str(tmp_path / "watch")]
    # the group's start (from Empty) and the LeaveGroup rebalance, 6 partitions, 2 owners, 3 partitions moved
    for g in (served, watched):
        assert (g["group_id"], g["assignor"], g["rebalances"], g["completed"], g["from_empty"], g["members"],
                g["partitions"], g["partitions_moved"]) == ("billing", "range", 2, 2, 1, 2, 6, 3)
    rb = sorted((r for r in res.data["rebalances"] if r["run"] == str(tmp_path / "watch")),
                key=lambda r: r["rebalance_no"])
    assert [r["trigger"] for r in rb] == ["member-joined", "member-left"]
    # the same owners, partition by partition
    def owners(run):
        by: dict = {}
        for o in sorted((o for o in res.data["ownership"] if o["run"] == run), key=lambda o: o["from_ms"]):
            lst = by.setdefault((o["topic"], o["partition"]), [])
            if not lst or lst[-1] != o["owner"]:
                lst.append(o["owner"])
        return by
    assert owners(str(tmp_path / "watch")) == owners(str(tmp_path / "data"))
    # the watcher's committed offsets and log end offsets (produce.jsonl) give a lag chart
    assert (str(tmp_path / "watch"), "billing") in res.data["lag"]
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.count("rebalance Gantt: group billing") == 2
