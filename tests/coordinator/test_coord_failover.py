"""FindCoordinator, partition load by replay, COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR, failover."""

import pytest

from coord_harness import E, Env
from coordinator import BrokerStopped, RequestContext
from coordinator.replay import load_durable
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


def failover_env(**kw):
    env = Env(**kw)
    ids, leader, gen = env.stable_group(2, session=30_000)
    env.commit("g", gen, leader, {("foo", 0): 42, ("foo", 1): 43}, metadata="m")
    return env, ids, leader, gen


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


class TestReplay:
    def test_live_state_is_the_replay_of_the_log(self):
        env = Env()
        ids, leader, gen = env.stable_group(3, session=30_000)
        env.commit("g", gen, leader, {("foo", 0): 1})
        env.join_new()
        env.leave("g", [(ids[1], None)])
        env.complete_join()
        env.check_replay()
        env.advance(60_000)  # sessions expire, group empties
        env.check_replay()

    def test_replay_across_failovers(self):
        env, ids, leader, gen = failover_env()
        env.join(member_id=leader, session=30_000)
        env.stop_broker(env.svc.coordinator_of("g"))
        env.join_new(session=30_000)
        env.heartbeat("g", gen, leader)
        env.check_replay()

    def test_durable_replay_equals_kafka_load(self):
        env, ids, leader, gen = failover_env()
        loaded = load_durable(env.shard("g").log.entries)
        g = loaded.groups.get("g")
        assert (str(g.state), g.generation_id, g.leader_id, list(g.members)) == ("Stable", gen, leader, ids)
        assert loaded.offsets.snapshot() == env.shard("g").offsets.snapshot()
