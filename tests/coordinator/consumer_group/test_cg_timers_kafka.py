"""Session and rebalance timers, the partition load, failover mid-reconciliation: Kafka 4.4's
``GroupMetadataManagerTest`` timer cases (each names its Kafka test) and kgroup's own failover checks. Kafka's
``context.sleep(ms)`` is :meth:`CgEnv.advance`; ``onLoaded`` is a real coordinator move (:meth:`CgEnv.failover`).
Timer keys are Kafka's: ``session-timeout-<group>-<member>``, ``rebalance-timeout-<group>-<member>``."""

from __future__ import annotations

from coordinator import records as R
from coordinator.consumer_group import ConsumerGroupState, MemberState

from cg_env import CgEnv, assert_records, assignment_of
from test_cg_heartbeat_kafka import FOO, G, M, asg, ep

S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS


def removal(member_id: str, epoch: int, metadata_hash: int, emptied: bool) -> list[R.Record]:
    recs = [R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id=member_id),
            R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id=member_id),
            R.ConsumerGroupMemberMetadataTombstone(G, member_id=member_id),
            R.ConsumerGroupMetadata(G, epoch=epoch, metadata_hash=metadata_hash)]
    if emptied:
        recs.append(R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=epoch, assignment_timestamp_ms=0))
    return recs


def test_session_timeout_lifecycle():
    """testSessionTimeoutLifecycle: armed on the first heartbeat, re-armed on each, cancelled on leave."""
    env = CgEnv(topics={"foo": 6}, racks=True)
    env.assignor.prepare({"m": asg(foo=range(6))})
    r = env.heartbeat(G, "m", 0, rebalance_timeout_ms=90000, names=["foo"], owned={})
    assert r.member_epoch == 2
    assert env.timers() == {f"session-timeout-{G}-m": env.now + 45000}
    assert env.advance(r.heartbeat_interval_ms) == []
    r = env.heartbeat(G, "m", 2)
    assert r.member_epoch == 2 and env.timers() == {f"session-timeout-{G}-m": env.now + 45000}
    assert env.advance(r.heartbeat_interval_ms) == []
    r = env.heartbeat(G, "m", -1)
    assert r.member_epoch == -1 and env.timers() == {}


def test_session_timeout_expiration():
    """testSessionTimeoutExpiration: the member is fenced; the emptied group's assignment epoch follows
    (KAFKA-20442)."""
    env = CgEnv(topics={"foo": 6}, racks=True)
    env.assignor.prepare({"m": asg(foo=range(6))})
    assert env.heartbeat(G, "m", 0, rebalance_timeout_ms=90000, names=["foo"], owned={}).member_epoch == 2
    assert_records(removal("m", 3, 0, emptied=True), env.advance(45000 + 1))
    assert env.timers() == {}
    assert env.group(G).state == ConsumerGroupState.EMPTY


def test_session_timeout_expiration_static_member():
    """testSessionTimeoutExpirationStaticMember: a temporary leave (-2) keeps the session timer running."""
    env = CgEnv(topics={"foo": 6}, racks=True)
    env.assignor.prepare({"m": asg(foo=range(6))})
    assert env.heartbeat(G, "m", 0, instance_id="m", rebalance_timeout_ms=90000, names=["foo"],
                         owned={}).member_epoch == 2
    assert env.heartbeat(G, "m", -2, instance_id="m", rebalance_timeout_ms=90000, names=["foo"],
                         owned={}).member_epoch == -2
    assert env.timers() == {f"session-timeout-{G}-m": env.now + 45000}
    assert_records(removal("m", 3, 0, emptied=True), env.advance(45000 + 1))
    assert env.timers() == {}


def test_rebalance_timeout_lifecycle():
    """testRebalanceTimeoutLifecycle: armed (the member's rebalance timeout) when it must revoke, cancelled when it
    acknowledges; the old timer firing later would be a no-op (epoch check)."""
    env = CgEnv(topics={"foo": 3}, racks=True)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2])})
    r = env.heartbeat(G, "m1", 0, rebalance_timeout_ms=180000, names=["foo"], owned={})
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1, 2]})
    assert env.advance(5000) == []
    env.assignor.prepare({"m1": asg(foo=[0, 1]), "m2": asg(foo=[2])})
    r = env.heartbeat(G, "m2", 0, rebalance_timeout_ms=90000, names=["foo"], owned={})
    assert (r.member_epoch, assignment_of(r)) == (3, {})
    assert env.advance(5000) == []
    r = env.heartbeat(G, "m1", 2, rebalance_timeout_ms=12000, names=["foo"])
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1]})
    assert env.timers()[f"rebalance-timeout-{G}-m1"] == env.now + 12000
    assert env.advance(5000) == []
    r = env.heartbeat(G, "m1", 2, owned={FOO: [0, 1]})
    assert (r.member_epoch, r.assignment) == (3, None)
    assert f"rebalance-timeout-{G}-m1" not in env.timers()
    # a stale rebalance timeout (armed at epoch 2) does nothing now that the member is at epoch 3
    env.manager.rt.run(env.now, None, lambda _: env.manager.rebalance_timeout(G, "m1", 2, 12000), None)
    assert "m1" in env.group(G).members


def test_rebalance_timeout_expiration():
    """testRebalanceTimeoutExpiration: a member that does not revoke within its rebalance timeout is fenced."""
    env = CgEnv(topics={"foo": 3}, racks=True)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2])})
    r = env.heartbeat(G, "m1", 0, rebalance_timeout_ms=10000, names=["foo"], owned={})
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1, 2]})
    assert env.advance(5000) == []
    env.assignor.prepare({"m1": asg(foo=[0, 1]), "m2": asg(foo=[2])})
    assert env.heartbeat(G, "m2", 0, rebalance_timeout_ms=10000, names=["foo"], owned={}).member_epoch == 3
    assert env.advance(5000) == []
    r = env.heartbeat(G, "m1", 2)
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1]})
    assert_records(removal("m1", 4, env.metadata_hash("foo"), emptied=False), env.advance(10000 + 1))
    assert not any(k.endswith("-m1") for k in env.timers())


def _loaded_group(env: CgEnv, group_id: str = "foo") -> None:
    """testOnLoaded's group: foo-1 in UNREVOKED_PARTITIONS at epoch 9, foo-2 STABLE at 10."""
    foo1 = M("foo-1", state=UNREV, member_epoch=9, previous_member_epoch=9, subscribed_topic_names=["foo"],
             server_assignor_name="range", rebalance_timeout_ms=30000, assigned_partitions=ep(10, foo=[0, 1, 2]),
             partitions_pending_revocation=ep(9, foo=[3, 4, 5]))
    foo2 = M("foo-2", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=["foo"],
             server_assignor_name="range", rebalance_timeout_ms=30000)
    env.build_group(group_id, 10, members=[foo1, foo2], assignments={"foo-1": asg(foo=[3, 4, 5])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo"))


def test_on_loaded():
    """testOnLoaded: every member's session timer; the rebalance timer of the member in UNREVOKED_PARTITIONS.
    (Kafka's test leaves the rebalance timeout at -1; here it is 30 s so the timer does not fire at once.)"""
    env = CgEnv(brokers=2)
    _loaded_group(env)
    assert env.timers() == {}  # replayed records arm nothing
    env.failover()
    assert env.timers() == {"session-timeout-foo-foo-1": env.now + 45000,
                            "session-timeout-foo-foo-2": env.now + 45000,
                            "rebalance-timeout-foo-foo-1": env.now + 30000}


def test_on_loaded_session_timeout_expiration():
    """testOnLoadedSessionTimeoutExpiration: a member loaded from the log that never heartbeats is fenced."""
    env = CgEnv(topics={"foo": 6}, brokers=2)
    foo1 = M("foo-1", state=S, member_epoch=9, previous_member_epoch=9, subscribed_topic_names=["foo"],
             server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group("group", 10, members=[foo1], assignments={"foo-1": asg(foo=range(6))}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    env.failover()
    assert "session-timeout-group-foo-1" in env.timers()
    got = env.advance(45000 + 1)
    assert got == [R.ConsumerGroupCurrentMemberAssignmentTombstone("group", member_id="foo-1"),
                   R.ConsumerGroupTargetAssignmentMemberTombstone("group", member_id="foo-1"),
                   R.ConsumerGroupMemberMetadataTombstone("group", member_id="foo-1"),
                   R.ConsumerGroupMetadata("group", epoch=11, metadata_hash=0),
                   R.ConsumerGroupTargetAssignmentMetadata("group", assignment_epoch=11, assignment_timestamp_ms=0)]
    assert env.timers() == {}


def test_failover_mid_reconciliation_member_completes():
    """kgroup: the coordinator moves while a member is in UNREVOKED_PARTITIONS. The new coordinator's state is the
    replay of the log (checked after every call), the session and rebalance timers are re-armed, and the members
    complete the reconciliation against the new coordinator."""
    env = CgEnv(topics={"foo": 3}, brokers=2)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2])})
    assert env.heartbeat(G, "m1", 0, rebalance_timeout_ms=20000, names=["foo"], owned={}).member_epoch == 2
    env.advance(2000)
    env.assignor.prepare({"m1": asg(foo=[0, 1]), "m2": asg(foo=[2])})
    assert env.heartbeat(G, "m2", 0, rebalance_timeout_ms=20000, names=["foo"], owned={}).member_epoch == 3
    r = env.heartbeat(G, "m1", 2)
    assert (r.member_epoch, assignment_of(r), env.member(G, "m1").state) == (2, {FOO: [0, 1]}, UNREV)
    before = env.group(G).snapshot()

    env.advance(1000)
    env.failover()
    assert env.group(G).snapshot() == before
    assert env.timers() == {f"session-timeout-{G}-m1": env.now + 45000, f"session-timeout-{G}-m2": env.now + 45000,
                            f"rebalance-timeout-{G}-m1": env.now + 20000}
    # m2 still waits for foo-2; m1 revokes it; m2 gets it.
    r = env.heartbeat(G, "m2", 3)
    assert (r.member_epoch, r.assignment, env.member(G, "m2").state) == (3, None, UNREL)
    r = env.heartbeat(G, "m1", 2, owned={FOO: [0, 1]})
    assert (r.member_epoch, env.member(G, "m1").state) == (3, S)
    assert f"rebalance-timeout-{G}-m1" not in env.timers()
    r = env.heartbeat(G, "m2", 3, owned={})
    assert (r.member_epoch, assignment_of(r), env.member(G, "m2").state) == (3, {FOO: [2]}, S)
    assert env.group(G).state == ConsumerGroupState.STABLE


def test_failover_mid_reconciliation_rebalance_timeout_fences():
    """kgroup: the rebalance timer re-armed by the new coordinator's load fences a member that never revokes (its
    full rebalance timeout counts again from the load, as Kafka's onLoaded schedules it)."""
    env = CgEnv(topics={"foo": 3}, brokers=2)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2])})
    env.heartbeat(G, "m1", 0, rebalance_timeout_ms=20000, names=["foo"], owned={})
    env.advance(2000)
    env.assignor.prepare({"m1": asg(foo=[0, 1]), "m2": asg(foo=[2])})
    env.heartbeat(G, "m2", 0, rebalance_timeout_ms=60000, names=["foo"], owned={})
    env.heartbeat(G, "m1", 2)
    env.advance(15000)
    env.failover()
    env.heartbeat(G, "m2", 3)       # keeps m2 alive
    assert env.advance(19999) == [] and "m1" in env.group(G).members
    env.heartbeat(G, "m2", 3)
    assert_records(removal("m1", 4, env.metadata_hash("foo"), emptied=False), env.advance(2))
    r = env.heartbeat(G, "m2", 3, owned={})
    assert (r.member_epoch, assignment_of(r)) == (4, {FOO: [2]})
