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


async def _consumer_group_life(data_dir: Path, watch_dir: Path) -> tuple[str, str]:
    """Two of kgroup's own KIP-848 consumers (client/driver.py, group.protocol=consumer, server assignor range)
    on a real server, watched by kgroup watch: a joins alone, b joins once a is stable, b leaves, then a (the group
    is Empty)."""
    from client.driver import AsyncConsumer
    from broker_harness import make_settings, start_server
    from kgroup.cmd_watch import watch
    srv = await start_server(make_settings(data_dir=str(data_dir), **{
        "group_consumer_heartbeat_interval_ms": 100, "group_consumer_min_heartbeat_interval_ms": 50,
        "group_consumer_session_timeout_ms": 2000, "group_consumer_min_session_timeout_ms": 1000,
        "group_consumer_assignment_interval_ms": 0}))
    consumers = []
    stop = asyncio.Event()
    watcher = asyncio.ensure_future(watch(srv.bootstrap, str(watch_dir), groups=["ledger"], interval_ms=50,
                                          stop=stop))

    def consumer(name: str) -> AsyncConsumer:
        c = AsyncConsumer(srv.bootstrap, {"group.id": "ledger", "client.id": name, "group.protocol": "consumer",
                                          "group.remote.assignor": "range", "retry.backoff.ms": 50,
                                          "retry.backoff.max.ms": 200, "metadata.max.age.ms": 1000},
                          name=name, processing_ms=5)
        consumers.append(c)
        return c

    async def owns(c: AsyncConsumer, n: int) -> None:
        await c.wait_until(lambda c: c.stable and len(c.assignment) == n, 10.0)

    try:
        a = await consumer("a").start(["orders"])
        await owns(a, 6)
        await asyncio.sleep(0.05)           # own for a measurable time (wall-clock milliseconds)
        b = await consumer("b").start(["orders"])
        await asyncio.gather(owns(a, 3), owns(b, 3))
        await asyncio.sleep(0.05)
        a_id, b_id = a.member_id, b.member_id
        await asyncio.sleep(0.3)            # the watcher's polls (50 ms apart) see each assignment Stable
        await b.close()
        await owns(a, 6)
        await asyncio.sleep(0.3)
        return a_id, b_id
    finally:
        for c in consumers:
            await c.close()
        await asyncio.sleep(0.2)            # the watcher sees the group Empty: the last ownership has an end
        stop.set()
        assert await asyncio.wait_for(watcher, 10) == 0
        await srv.close()


def test_analyze_reads_a_real_servers_consumer_group(spark, tmp_path):
    """A KIP-848 group on a real server, from its data directory. Kafka's rules give the expectations: every
    join and every leave bumps the group epoch (GroupMetadataManager), and the first member of an empty group
    brings it to 2 (GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup), so a, b, b's leave, a's leave
    are epochs 2-5; the range assignor splits 6 partitions 3/3; the leaver's 3 partitions are free at once and go to a; a's
    leave empties the group."""
    from analysis.analyze import run_analysis
    a_id, b_id = asyncio.run(_consumer_group_life(tmp_path / "data", tmp_path / "watch"))
    res = run_analysis([str(tmp_path / "data"), str(tmp_path / "watch")], tmp_path / "out", spark=spark,
                       export_events=False)
    served = str(tmp_path / "data")
    (g,) = [g for g in res.data["groups"] if g["group_id"] == "ledger" and g["run"] == served]
    assert (g["protocol"], g["assignor"], g["members"], g["partitions"], g["group_epochs"],
            g["group_stopped_ms"]) == ("consumer", "range", 2, 6, 4, None)
    epochs = sorted((r for r in res.data["epochs"] if r["run"] == served), key=lambda r: r["epoch"])
    assert [(r["epoch"], r["trigger"], r["members"]) for r in epochs] == [
        (2, "member-joined", 1), (3, "member-joined", 2), (4, "member-left", 1), (5, "member-left", 0)]
    for r in epochs:                        # each reconciled: every member at the target after the bump
        assert r["reconciled_ms"] is not None and r["reconciled_ms"] >= r["bumped_ms"] >= 0
        assert r["reconciliation_ms"] == r["reconciled_ms"] - r["bumped_ms"]
    # epoch 2: a gives up 3 partitions (revoked), b gets them; epoch 3: b's 3 go with its leave, a gets them;
    # epoch 4: a's 6 go with it
    assert [(r["partitions_revoked"], r["partitions_assigned"]) for r in epochs] == [(0, 6), (3, 3), (3, 3),
                                                                                     (6, 0)]
    rbs = sorted((r for r in res.data["rebalances"] if r["run"] == served), key=lambda r: r["rebalance_no"])
    # a's join (from Empty), b's join, b's leave; a's leave takes the group from Stable straight to Empty (no
    # member left to reconcile: no reconciliation, and epoch 5 is reconciled at its bump)
    assert [(r["protocol"], r["trigger"], r["outcome"], r["members_before"], r["members_after"],
             r["partitions_moved"]) for r in rbs] == [("consumer", "member-joined", "stable", 0, 1, 0),
                                                      ("consumer", "member-joined", "stable", 1, 2, 3),
                                                      ("consumer", "member-left", "stable", 2, 1, 3)]
    assert epochs[-1]["reconciliation_ms"] == 0
    assert {o["owner"] for o in res.data["ownership"] if o["run"] == served} == {a_id, b_id}
    # what kgroup watch saw of it (ConsumerGroupDescribe) is the consumer protocol too, with the same owners
    watched = str(tmp_path / "watch")
    (w,) = [g for g in res.data["groups"] if g["run"] == watched]
    assert (w["group_id"], w["protocol"], w["group_stopped_ms"], w["members"], w["partitions"]) == \
        ("ledger", "consumer", None, 2, 6)

    def owners(run):
        by: dict = {}
        for o in sorted((o for o in res.data["ownership"] if o["run"] == run), key=lambda o: o["from_ms"]):
            lst = by.setdefault(o["partition"], [])
            if not lst or lst[-1] != o["owner"]:
                lst.append(o["owner"])
        return by
    assert owners(watched) == owners(served)
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "consumer · range" in html and "group epochs of group ledger" in html
