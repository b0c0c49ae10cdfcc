"""FindCoordinator, the load of a partition by replay, COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR, the unload of
a partition whose leadership moves, broker failover."""

import pytest

from coord_harness import E, Env, failover_env
from coordinator import BrokerStopped, RequestContext
from protocol.messages import FindCoordinatorRequest, HeartbeatRequest


def find(env, key, version=4, broker=0, key_type=0):
    if version >= 4:
        req = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
    else:
        req = FindCoordinatorRequest(key=key, key_type=key_type)
    r = env.resp(env.send(req, version, group_id="", broker=broker))
    if version >= 4:
        c = r.coordinators[0]
        return c.error_code, c.node_id, c.host, c.port
    return r.error_code, r.node_id, r.host, r.port


@pytest.mark.parametrize("version", [1, 3, 4])
def test_find_coordinator(env, version):
    # "groupId" -> partition 18 -> round-robin leader 18 % 3 = 0; any broker answers
    assert find(env, "groupId", version, broker=2) == (0, 0, "localhost", 9092)
    assert find(env, "otherGroup", version)[1] == 13 % 3


def test_find_coordinator_transaction_key_type_is_not_supported(env):
    assert find(env, "tx", key_type=1)[0] == E.INVALID_REQUEST


def test_find_coordinator_without_enough_brokers_for_the_offsets_topic():
    env = Env(brokers=2)
    assert find(env, "g")[:2] == (E.COORDINATOR_NOT_AVAILABLE, -1)


def test_find_coordinator_after_broker_stop(env):
    before = find(env, "groupId")[1]
    env.stop_broker(before)
    assert find(env, "groupId", broker=2)[1] == 1


def test_new_coordinator_answers_with_identical_offsets_and_group_state():
    env, ids, leader, gen = failover_env()
    old = env.svc.coordinator_of("g")
    offsets_before = env.svc.committed_offsets("g")
    describe_before = env.resp(env.describe("g")).groups[0]
    out = env.stop_broker(old)
    new = env.svc.coordinator_of("g")
    assert new != old and any(ch.topic == "__consumer_offsets" for ch in out.leadership)
    with pytest.raises(BrokerStopped):
        env.svc.handle(old, HeartbeatRequest(group_id="g", generation_id=gen, member_id=leader),
                       RequestContext(999, 4), env.now)
    assert env.fetched(env.fetch("g", {"foo": [0, 1]})) == {("foo", 0): (42, -1, "m", E.NONE),
                                                             ("foo", 1): (43, -1, "m", E.NONE)}
    assert env.svc.committed_offsets("g") == offsets_before
    assert env.resp(env.describe("g")).groups[0] == describe_before
    assert env.err(env.heartbeat("g", gen, leader)) == E.NONE
    assert any(e.record.TYPE == "CoordinatorLoaded" for e in env.records)


def test_loaded_members_must_heartbeat_the_new_coordinator():
    env, ids, leader, gen = failover_env()
    env.advance(1000)
    env.stop_broker(env.svc.coordinator_of("g"))
    t_load = env.now
    for _ in range(3):
        env.advance(9_000)
        env.heartbeat("g", gen, leader)
    env.advance_to(t_load + 29_999)
    assert len(env.group().members) == 2
    env.advance_to(t_load + 30_000)  # the follower's session, armed at load time, expires
    assert list(env.group().members) == [leader] and env.state() == "PreparingRebalance"


def test_rebalance_in_flight_is_lost_and_parked_requests_are_abandoned():
    env, ids, leader, gen = failover_env()
    rid = env.join(member_id=leader, session=30_000)  # PreparingRebalance, parked on the old coordinator
    env.stop_broker(env.svc.coordinator_of("g"))
    # (the harness only sees outputs of its own calls; stopping returned the abandoned parked join)
    g = env.group()
    assert (str(g.state), g.generation_id) == ("Stable", gen)  # the last persisted state


def test_completing_rebalance_is_rolled_back_to_the_last_persisted_generation():
    env, ids, leader, gen = failover_env()
    follower = [m for m in ids if m != leader][0]
    env.join(member_id=leader, session=30_000)
    env.join(member_id=follower, session=30_000)
    assert env.state() == "CompletingRebalance" and env.group().generation_id == gen + 1
    out = env.stop_broker(env.svc.coordinator_of("g"))
    assert env.state() == "Stable" and env.group().generation_id == gen
    assert env.err(env.sync("g", gen + 1, follower)) == E.ILLEGAL_GENERATION
    assert env.err(env.heartbeat("g", gen, follower)) == E.NONE


def test_stop_abandons_parked_requests():
    env = Env()
    mid, rid = env.join_new()
    out = env.stop_broker(env.svc.coordinator_of("g"))
    assert out.abandoned == [rid] and not out.responses


def test_find_coordinator_error_message():
    """KafkaApis.handleFindCoordinatorRequestLessThanV4: error_message = Errors.message(), i.e. "NONE" on
    success; V4AndAbove: no error message per coordinator."""
    from protocol.messages import FindCoordinatorRequest
    env = Env()
    r = env.resp(env.send(FindCoordinatorRequest(key="g", key_type=0), 3, group_id="", broker=0))
    assert (r.error_code, r.error_message) == (0, "NONE")
    r = env.resp(env.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, group_id="", broker=0))
    assert (r.coordinators[0].error_code, r.coordinators[0].error_message) == (0, None)
    env2 = Env(brokers=2)  # offsets topic cannot be created: COORDINATOR_NOT_AVAILABLE
    r = env2.resp(env2.send(FindCoordinatorRequest(key="g", key_type=0), 3, group_id="", broker=0))
    assert (E(r.error_code), r.error_message) == (E.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.")
    r = env2.resp(env2.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, group_id="", broker=0))
    assert (E(r.coordinators[0].error_code), r.coordinators[0].error_message) == (E.COORDINATOR_NOT_AVAILABLE, None)


def test_loaded_member_with_rebalance_timeout_minus_one_uses_session_timeout():
    """testReplayGroupMetadataRecords(useDefaultRebalanceTimeout=true)."""
    from coordinator import records as R
    from coordinator.group import group_from_metadata
    rec = R.GroupMetadata(group_id="g", protocol_type="consumer", generation_id=1, protocol_name="range",
                          leader="member-0", current_state_timestamp_ms=0, members=(
                              R.MemberMetadata(member_id="member-0", group_instance_id="i-0", client_id="c",
                                               client_host="h", rebalance_timeout_ms=-1, session_timeout_ms=4000,
                                               subscription=b"", assignment=b"\x02"),))
    g = group_from_metadata(rec, 0)
    assert g.members["member-0"].rebalance_timeout_ms == 4000 and str(g.state) == "Stable"


class TestLoading:
    def test_load_in_progress(self):
        env, ids, leader, gen = failover_env(**{"kgroup.coordinator.load.time.ms": 500})
        env.stop_broker(env.svc.coordinator_of("g"))
        assert env.resp(env.join(member_id=leader)).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        assert env.err(env.sync("g", gen, leader)) == E.COORDINATOR_LOAD_IN_PROGRESS  # new coordinator
        assert env.err(env.heartbeat("g", gen, leader)) == E.NONE  # "respond blindly"
        assert env.commit_errors(env.commit("g", gen, leader, {("foo", 0): 1})) == \
            {("foo", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
        assert env.resp(env.fetch("g", {"foo": [0]})).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        assert env.resp(env.describe("g")).groups[0].error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        assert env.resp(env.list_groups(env.svc.coordinator_of("g"))).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        env.advance(499)
        assert env.err(env.sync("g", gen, leader)) == E.COORDINATOR_LOAD_IN_PROGRESS
        env.advance(1)
        assert env.err(env.sync("g", gen, leader)) == E.NONE
        assert env.fetched(env.fetch("g", {"foo": [0]}))[("foo", 0)][0] == 42

    def test_old_coordinator_answers_not_coordinator_after_leadership_moves(self):
        env, ids, leader, gen = failover_env()
        first = env.svc.coordinator_of("g")
        env.stop_broker(first)
        second = env.svc.coordinator_of("g")
        env.start_broker(first)
        assert env.svc.coordinator_of("g") == second  # the restarted broker is a follower
        rid = env.join(member_id=leader, session=30_000)  # parked on `second`
        env._collect(env.svc.elect_preferred_leaders(env.now))
        assert env.svc.coordinator_of("g") == first
        r = env.resp(rid)
        assert (r.error_code, r.member_id) == (E.NOT_COORDINATOR, leader)
        assert env.err(env.send(HeartbeatRequest(group_id="g", generation_id=gen, member_id=leader), 4,
                                broker=second)) == E.NOT_COORDINATOR
        assert env.err(env.heartbeat("g", gen, leader)) == E.NONE  # at the new (old) coordinator

    def test_unload_answers_parked_requests_not_coordinator(self):
        """testClassicGroupOnUnloadedEmptyAndPreparingRebalance: parked joins -> NOT_COORDINATOR with their own
        member id and no members."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        r1 = env.join(version=3)
        r2 = env.join(version=3)
        assert env.resp(r1) is None
        # unload the shard the way a leadership move with the old leader alive does (onUnloaded)
        result = env.shard().unload(env.now, answer=True)
        answers = dict(result.released)
        for rid in (r1, r2):
            assert E(answers[rid].error_code) == E.NOT_COORDINATOR and answers[rid].member_id != ""
            assert answers[rid].members == []


class TestMoveCoordinator:
    """``GroupCoordinatorService.move_coordinator``: a controlled leader election of the group's offsets partition
    (fault control's "move a leader"): the old leader unloads (parked requests NOT_COORDINATOR), the new one loads
    the partition from its log (Kafka's load: the group Stable, offsets kept)."""

    def test_the_group_moves_with_its_offsets_and_parked_requests_are_answered(self):
        env, ids, leader, gen = failover_env()
        old = env.svc.coordinator_of("g")
        new = (old + 1) % 3
        parked = env.join(member_id=leader)  # Stable leader rejoin: parked in PreparingRebalance
        assert env.resp(parked) is None
        out = env.svc.move_coordinator("g", new, env.now)
        env._collect(out)
        assert env.svc.coordinator_of("g") == new
        assert [(c.old_leader, c.new_leader) for c in out.leadership] == [(old, new)]
        assert [(e.record.TYPE, e.record.broker_id) for e in out.records] == [("CoordinatorLoaded", new)]
        r = env.resp(parked)
        assert (E(r.error_code), r.member_id) == (E.NOT_COORDINATOR, leader)
        assert env.state() == "Stable" and env.group().generation_id == gen  # loaded from the GroupMetadata record
        assert env.svc.committed_offsets("g")[("foo", 0)].offset == 42
        assert env.err(env.heartbeat("g", gen, leader, version=4)) == E.NONE  # answered by the new coordinator

    def test_a_broker_that_is_not_a_replica_becomes_one(self):
        env = Env(brokers=4, **{"offsets.topic.replication.factor": 2})
        env.stable_group(1)
        p = env.svc.partition_for("g")
        ps = env.svc.cluster.partition("__consumer_offsets", p)
        outsider = next(b for b in range(4) if b not in ps.replicas)
        env._collect(env.svc.move_coordinator("g", outsider, env.now))
        assert outsider in ps.replicas and outsider in ps.isr and env.svc.coordinator_of("g") == outsider
        assert env.state() == "Stable"

    def test_a_stopped_or_unknown_broker_is_refused(self):
        env, ids, leader, gen = failover_env()
        target = (env.svc.coordinator_of("g") + 1) % 3
        env.stop_broker(target)
        with pytest.raises(ValueError, match="stopped"):
            env.svc.move_coordinator("g", target, env.now)
        with pytest.raises(ValueError, match="no broker 7"):
            env.svc.move_coordinator("g", 7, env.now)

    def test_a_refused_move_changes_nothing_not_even_the_time(self):
        """The election is refused before the call moves the clock: timers that fall due by then fire on the next
        call and their answers reach the driver (were they fired inside a call that then raised, their records
        would be in the log but the driver would never see them or their answers)."""
        env, ids, leader, gen = failover_env()
        target = (env.svc.coordinator_of("g") + 1) % 3
        env.stop_broker(target)
        before, seen = env.svc.now_ms, len(env.types())
        env.now += 30_001  # both sessions expire by now
        with pytest.raises(ValueError, match="stopped"):
            env.svc.move_coordinator("g", target, env.now)
        assert env.svc.now_ms == before and set(env.group().members) == set(ids)
        env.advance(0)  # the expiries: the first member's starts a rebalance, the last one's completes it empty
        assert env.types()[seen:] == ["MemberRemoved", "RebalanceStarted", "MemberRemoved", "JoinCompleted",
                                      "GroupMetadata"]
        assert env.state() == "Empty"

