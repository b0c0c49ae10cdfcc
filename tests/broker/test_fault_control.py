"""Fault control (broker/faults.py, ``kgroup ctl``): the rule model (broker/faultrules.py), and fault control over
TCP and the control channel. (The core operations it uses -- ``GroupCoordinatorService.move_coordinator`` and
``expire_sessions`` -- are tested in tests/coordinator.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from broker.faultrules import FaultRule, FaultRules
from broker.server import KGroupServer
from client.control import ControlClient
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import DescribeGroupsRequest, FindCoordinatorRequest, HeartbeatRequest
from broker_harness import TIMEOUT, batch, form_group, leader_conn, part, produce_req

E = ErrorCode


# --- the rule model (broker/faultrules.py) --------------------------------------------------------------------

HB, JOIN = int(ApiKey.HEARTBEAT), int(ApiKey.JOIN_GROUP)


def _hb(group: str, member: str) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=1, member_id=member)


def test_take_matches_api_group_and_member_prefix_first_rule_first() -> None:
    rules = FaultRules()
    a = rules.add(FaultRule("fail", api=HB, group="g", count=1, error=int(E.REBALANCE_IN_PROGRESS)))
    b = rules.add(FaultRule("fail", api=HB, group="g", count=1, error=int(E.NOT_COORDINATOR)))
    drop = rules.add(FaultRule("drop", group="g", member="client-b"))
    assert (a, b, drop) == (1, 2, 3)
    assert rules.take(JOIN, _hb("other", "client-b-1234")) is None  # wrong group, and no rule for JoinGroup there
    # queued rules for the same requests apply one after the other; a used-up rule is removed
    assert rules.take(HB, _hb("g", "x")).error == E.REBALANCE_IN_PROGRESS
    assert rules.take(HB, _hb("g", "x")).error == E.NOT_COORDINATOR
    assert [r.rule_id for r in rules] == [drop]
    assert rules.take(HB, _hb("g", "x")) is None  # not the member
    assert rules.take(HB, _hb("g", "client-b-1234")).action == "drop"  # a prefix of the member id: the client id
    assert rules.take(HB, _hb("g", "client-b-1234")).action == "drop"  # no count: until cleared
    assert rules.clear(drop) == 1 and not rules


def test_take_reads_the_groups_of_every_kind_of_request() -> None:
    rules = FaultRules()
    rules.add(FaultRule("drop", group="g"))
    assert rules.take(int(ApiKey.DESCRIBE_GROUPS), DescribeGroupsRequest(groups=["a", "g"])) is not None
    assert rules.take(int(ApiKey.FIND_COORDINATOR), FindCoordinatorRequest(key="g", key_type=0)) is not None
    assert rules.take(int(ApiKey.FIND_COORDINATOR), FindCoordinatorRequest(key_type=0, coordinator_keys=["g"])) \
        is not None
    assert rules.take(int(ApiKey.DESCRIBE_GROUPS), DescribeGroupsRequest(groups=["a"])) is None


def test_all_adds_delays_counts_down_and_draws_only_for_candidates() -> None:
    rules = FaultRules()
    rules.add(FaultRule("delay", client="c1", delay_ms=100, until_ms=1000))
    rules.add(FaultRule("delay", api=HB, delay_ms=50, requests=True, responses=True))
    rules.add(FaultRule("drop", client="c1", brokers=frozenset({2}), count=1))
    rules.add(FaultRule("duplicate", api=JOIN, responses=True, requests=False, probability=0.5))
    draws: list[float] = []

    def draw(value: float = 0.7) -> float:
        draws.append(value)
        return value

    assert rules.all(HB, "c1", 0, False, 10, draw) == (False, 150, False)  # both delays add up
    assert rules.all(HB, "c1", 0, False, 1000, draw) == (False, 50, False)  # the first rule's window is over
    assert rules.all(HB, "c1", 2, False, 10, draw) == (True, 150, False)  # a request to broker 2: dropped once
    assert rules.all(HB, "c1", 2, False, 10, draw) == (False, 150, False)  # used up
    assert rules.all(HB, "c1", 0, True, 10, draw) == (False, 50, False)  # a response: only the rule for both ways
    assert draws == []  # no rule with a probability matched yet
    assert rules.all(JOIN, "c2", 0, False, 10, draw) == (False, 0, False)  # a request: not a candidate
    assert rules.all(JOIN, "c2", 0, True, 10, draw) == (False, 0, False)  # drew 0.7 >= 0.5: does not apply
    assert rules.all(JOIN, "c2", 0, True, 10, lambda: draw(0.2)) == (False, 0, True)
    assert draws == [0.7, 0.2]


def test_a_rule_with_an_unknown_action_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault action"):
        FaultRule("explode")


# --- over TCP and the control channel -------------------------------------------------------------------------

async def test_fail_next_and_delay_rules(server: KGroupServer) -> None:
    members = await form_group(server, "fg", 1)
    m = members[0]
    faults = server.faults
    faults.fail_next("Heartbeat", 2, "REBALANCE_IN_PROGRESS", group="fg")
    assert await m.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert await m.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert await m.heartbeat() == 0  # the rule is used up
    assert faults.describe()["rules"] == []
    rid = faults.delay_heartbeats("fg", None, 300)
    t0 = time.monotonic()
    assert await m.heartbeat() == 0
    assert time.monotonic() - t0 >= 0.28
    faults.clear(rid)
    faults.fail_next("Produce", 1, "NOT_ENOUGH_REPLICAS")
    c = await leader_conn(server, "orders", 0)
    try:
        assert part(await c.call(produce_req("orders", 0, batch(["a"])), 9, timeout=TIMEOUT)).error_code == \
            E.NOT_ENOUGH_REPLICAS
        assert part(await c.call(produce_req("orders", 0, batch(["a"])), 9, timeout=TIMEOUT)).error_code == 0
    finally:
        await c.close()
    await m.close()


async def test_control_channel_and_kgroup_ctl(server: KGroupServer) -> None:
    members = await form_group(server, "ctl-g", 1)

    def blocking():
        with ControlClient(server.bootstrap) as cc:
            d = cc.call("describe", group="ctl-g")
            old = cc.call("coordinator", group="ctl-g")
            moved = cc.call("move_coordinator", group="ctl-g", broker=(old + 1) % 3)
            with pytest.raises(RuntimeError, match="unknown op"):
                cc.call("nonsense")
        out = subprocess.run([sys.executable, "-m", "kgroup", "ctl", "--bootstrap", server.bootstrap, "coordinator",
                              "ctl-g"], capture_output=True, text=True, timeout=30)
        return d, old, moved, out
    d, old, moved, out = await asyncio.wait_for(asyncio.to_thread(blocking), 40)
    assert d["group"]["members"] == [members[0].member_id]
    assert moved == {"group": "ctl-g", "partition": server.svc.partition_for("ctl-g"), "from": old,
                     "to": (old + 1) % 3}
    assert out.returncode == 0 and json.loads(out.stdout) == (old + 1) % 3
    # the old coordinator now answers NOT_COORDINATOR
    assert await members[0].heartbeat() == E.NOT_COORDINATOR
    await members[0].close()


def test_the_control_channel_accepts_loopback_peers_only() -> None:
    """(fail_next answers with protocol.error_responses, Kafka's getErrorResponse: tests/protocol/
    test_error_responses.py encodes it for every API and version; test_fail_next_and_delay_rules over TCP.)"""
    from broker.faults import _is_loopback

    assert _is_loopback("127.0.0.1:5555") and _is_loopback("::1:5555") and not _is_loopback("10.0.0.1:5555")


async def test_expire_member_over_tcp(server: KGroupServer) -> None:
    members = await form_group(server, "clk2", 2, session_timeout_ms=5000)
    expired = server.faults.expire_member("clk2", members[0].member_id)
    assert expired == [members[0].member_id]
    assert set(server.svc.group("clk2").members) == {members[1].member_id}
    with pytest.raises(ValueError, match="no member"):
        server.faults.expire_member("clk2", "nobody")
    for m in members:
        await m.close()
