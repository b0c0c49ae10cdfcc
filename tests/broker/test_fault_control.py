"""Fault control (broker/faults.py, ``kgroup ctl``): the rule model (broker/faultrules.py), the public operations
of the core it is built on, and the whole over TCP and the control channel.

``Cluster.elect_leader`` / ``GroupCoordinatorService.elect_leader`` (move a leader: Kafka's reassignment plus
leader election) and ``GroupCoordinatorService.expire_sessions`` (a member's session ends now:
``GroupCoordinator.onExpireHeartbeat``). Expected values follow Kafka's rules: a leader change bumps the leader
epoch; the old coordinator answers NOT_COORDINATOR, the new one loads the group from the log; an expired member
is removed and the group rebalances (the others' heartbeats get REBALANCE_IN_PROGRESS).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from broker.faultrules import FaultRule, FaultRules
from broker.server import KGroupServer
from client.control import ControlClient
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator import records as R
from coordinator.cluster import OFFSETS_TOPIC, ClusterError
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import (DescribeGroupsRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
                               SyncGroupRequest)
from broker_harness import TIMEOUT, batch, form_group, leader_conn, part, produce_req

E = ErrorCode


class _Group:
    """Members of one group driven straight through the service (no network)."""

    def __init__(self, svc: GroupCoordinatorService, group: str) -> None:
        self.svc = svc
        self.group = group
        self.rid = 0
        self.now = 0
        self.responses: dict[int, Any] = {}

    def call(self, req: Any, version: int, broker: int | None = None) -> Any:
        """Send a request, fire the timers due now (a delay-0 initial rebalance completes the join at once);
        its answer, or None while it is parked."""
        self.rid += 1
        b = self.svc.coordinator_of(self.group) if broker is None else broker
        self.collect(self.svc.handle(b, req, RequestContext(self.rid, version, "c", "/127.0.0.1"), self.now))
        self.collect(self.svc.poll(self.now))
        return self.responses.get(self.rid)

    def collect(self, out: Any) -> Any:
        self.responses.update(out.responses)
        return out

    def join(self, member_id: str = "") -> Any:
        return self.call(JoinGroupRequest(group_id=self.group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                          member_id=member_id, protocol_type="consumer",
                                          protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")]), 9)

    def one_member(self) -> tuple[str, int]:
        """A Stable group of one member: (member id, generation)."""
        r = self.join()
        assert r.error_code == E.MEMBER_ID_REQUIRED
        r = self.join(r.member_id)
        assert r.error_code == E.NONE
        s = self.call(SyncGroupRequest(group_id=self.group, generation_id=r.generation_id, member_id=r.member_id,
                                       protocol_type="consumer", protocol_name="range", assignments=[]), 5)
        assert s.error_code == E.NONE
        return r.member_id, r.generation_id

    def heartbeat(self, member_id: str, generation: int, broker: int | None = None) -> int:
        return self.call(HeartbeatRequest(group_id=self.group, generation_id=generation, member_id=member_id), 4,
                         broker).error_code


def _service(**settings: Any) -> GroupCoordinatorService:
    conf = {"group.initial.rebalance.delay.ms": 0, "kgroup.coordinator.load.time.ms": 0}
    conf.update(settings)
    svc = GroupCoordinatorService(num_brokers=3, config=CoordinatorConfig.create(conf), seed=1)
    svc.cluster.create_topic("orders", 3, 1)
    return svc


def test_elect_leader_moves_a_groups_coordinator_and_bumps_the_leader_epoch() -> None:
    svc = _service()
    g = _Group(svc, "moving")
    member, gen = g.one_member()
    p = svc.partition_for("moving")
    ps = svc.cluster.partition(OFFSETS_TOPIC, p)
    old, epoch = ps.leader, ps.leader_epoch
    new = (old + 1) % 3
    out = svc.elect_leader(OFFSETS_TOPIC, p, new, 10)
    assert [(c.partition, c.old_leader, c.new_leader, c.leader_epoch) for c in out.leadership] == \
        [(p, old, new, epoch + 1)]
    assert svc.coordinator_of("moving") == new
    assert any(isinstance(e.record, R.CoordinatorLoaded) and e.partition == p for e in out.records)
    g.now = 20
    assert g.heartbeat(member, gen, broker=old) == E.NOT_COORDINATOR
    # the new coordinator loaded the Stable group from the log: the member's generation is still valid
    assert g.heartbeat(member, gen, broker=new) == E.NONE


def test_elect_leader_of_a_broker_outside_the_replicas_reassigns_first() -> None:
    svc = _service()
    ps = svc.cluster.partition("orders", 0)
    outsider = next(b for b in range(3) if b not in ps.replicas)
    out = svc.elect_leader("orders", 0, outsider, 0)
    assert ps.leader == outsider and outsider in ps.replicas and outsider in ps.isr
    assert ps.leader_epoch == 1 and len(out.leadership) == 1
    assert svc.elect_leader("orders", 0, outsider, 0).leadership == []  # already the leader: no election


@pytest.mark.parametrize("case", ["stopped", "unknown broker", "unknown partition"])
def test_refused_elections_change_nothing(case: str) -> None:
    svc = _service()
    svc.stop_broker(2, 0)
    before = [(ps.leader, ps.leader_epoch, list(ps.replicas)) for ps in svc.cluster.partitions("orders")]
    topic, partition, broker = {"stopped": ("orders", 0, 2), "unknown broker": ("orders", 0, 7),
                                "unknown partition": ("orders", 9, 0)}[case]
    with pytest.raises(ClusterError):
        svc.elect_leader(topic, partition, broker, 500)
    assert [(ps.leader, ps.leader_epoch, list(ps.replicas)) for ps in svc.cluster.partitions("orders")] == before
    assert svc.now_ms == 0  # refused before time moved


def test_expire_sessions_removes_the_member_and_rebalances_the_group() -> None:
    svc = _service()
    g = _Group(svc, "expiring")
    a, gen = g.one_member()
    r = g.join()
    assert g.join(r.member_id) is None  # a second member: parked until the first rejoins (a rebalance)
    ja = g.join(a)
    assert ja.error_code == E.NONE and ja.generation_id == gen + 1
    out = g.collect(svc.expire_sessions("expiring", [a], 100))
    removed = [e.record for e in out.records if isinstance(e.record, R.MemberRemoved)]
    assert [(x.member_id, "heartbeat expiration" in x.reason) for x in removed] == [(a, True)]
    assert set(svc.group("expiring").members) == {r.member_id}
    g.now = 100
    assert g.heartbeat(r.member_id, gen + 1) == E.REBALANCE_IN_PROGRESS


def test_expire_sessions_needs_a_loaded_coordinator() -> None:
    svc = _service(**{"kgroup.coordinator.load.time.ms": 1000})  # every offsets partition is still loading
    with pytest.raises(ValueError, match="not loaded"):
        svc.expire_sessions("nobody", ["m"], 10)
    assert svc.now_ms == 0


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


def test_error_responses_encode_for_every_api_and_version() -> None:
    """fail_next answers with AbstractRequest.getErrorResponse's shape: it must encode for whatever is sent."""
    from broker.faults import _is_loopback, error_response
    from protocol.api import APIS
    from protocol.frames import decode_request, encode_request, encode_response

    for key, api in sorted(APIS.items()):
        for v in range(api.min_version, api.max_version + 1):
            _, body = decode_request(encode_request(key, v, 1, "c", api.request.cls())[4:])
            encode_response(key, v, 1, error_response(key, v, body, int(E.REBALANCE_IN_PROGRESS)))
    req = produce_req("orders", 0, b"")
    r = error_response(0, 9, req, int(E.NOT_LEADER_OR_FOLLOWER))
    assert part(r).error_code == E.NOT_LEADER_OR_FOLLOWER
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

