"""Fault control (broker/faults.py, ``kgroup ctl``): the public operations of the core it is built on, sans-IO.

``Cluster.elect_leader`` / ``GroupCoordinatorService.elect_leader`` (move a leader: Kafka's reassignment plus
leader election) and ``GroupCoordinatorService.expire_sessions`` (a member's session ends now:
``GroupCoordinator.onExpireHeartbeat``). Expected values follow Kafka's rules: a leader change bumps the leader
epoch; the old coordinator answers NOT_COORDINATOR, the new one loads the group from the log; an expired member
is removed and the group rebalances (the others' heartbeats get REBALANCE_IN_PROGRESS).
"""

from __future__ import annotations

from typing import Any

import pytest

from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator import records as R
from coordinator.cluster import OFFSETS_TOPIC, ClusterError
from protocol.errors import ErrorCode
from protocol.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest

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
