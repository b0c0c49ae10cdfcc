"""An independent client against `kgroup serve`: kafka-python 3's KafkaAdminClient lists and describes groups
and reads committed offsets (ApiVersions, Metadata, ListGroups, FindCoordinator, DescribeGroups, OffsetFetch --
nothing of the data path)."""

from __future__ import annotations

import asyncio

import pytest

from broker.server import KGroupServer

from broker_harness import form_group

pytestmark = pytest.mark.interop
kafka = pytest.importorskip("kafka")


async def test_kafka_python_admin_lists_and_describes_groups(server: KGroupServer) -> None:
    members = await form_group(server, "kp-group", 2)
    leader = next(m for m in members if m.is_leader)
    r = await leader.commit({1: 41, 4: 44})
    assert all(p.error_code == 0 for t in r.topics for p in t.partitions)

    def admin():
        from kafka import KafkaAdminClient

        a = KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="kp-admin", request_timeout_ms=5000)
        try:
            return a.list_groups(), a.describe_groups(["kp-group"]), a.list_group_offsets("kp-group")
        finally:
            a.close()

    listed, described, offsets = await asyncio.wait_for(asyncio.to_thread(admin), 30)
    assert {"group_id": "kp-group", "protocol_type": "consumer", "group_state": "Stable",
            "group_type": "classic"} in listed
    g = described["kp-group"]
    assert (g["group_state"], g["protocol_type"], g["protocol_data"], g["error"]) == ("Stable", "consumer", "range",
                                                                                      None)
    assert sorted(m["member_id"] for m in g["members"]) == sorted(m.member_id for m in members)
    assert sorted(p for m in g["members"] for t in m["member_assignment"]["assigned_partitions"]
                  for p in t["partitions"]) == list(range(6))
    got = {(tp.topic, tp.partition): om.offset for tp, om in offsets["kp-group"].items()}
    assert got == {("orders", 1): 41, ("orders", 4): 44}
    for m in members:
        await m.close()
