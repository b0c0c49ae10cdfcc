"""Records and replay: the versioned JSON form of the log, log offsets and timestamps, byte-identical logs for
the same inputs, the live state equal to the replay of the log (also across failovers), the durable load, and the
runtime's rollback of an operation that raises (nothing it produced stays)."""

import json

import pytest

from coord_harness import E, Env, failover_env, sub, two_member_stable
from coordinator import PARKED, SCHEMA_VERSION, CoordinatorConfig, RequestContext
from coordinator import records as R
from coordinator.classic_manager import ClassicGroupManager
from coordinator.group import ClassicGroup, Groups, IllegalStateTransition
from coordinator.log import PartitionLog
from coordinator.records import CONSUMER_GROUP_RECORD_TYPES, RECORD_TYPES, LogEntry
from coordinator.replay import load_durable, state_snapshot
from coordinator.runtime import CoordinatorRuntime
from coordinator.shard import GroupCoordinatorShard
from protocol.messages import JoinGroupRequest


def _scenario(seed: int) -> list[str]:
    env = Env(seed=seed)
    ids, leader, gen = env.stable_group(3, session=20_000)
    env.commit("g", gen, leader, {("foo", 0): 3})
    env.join(instance="s1")
    env.advance(25_000)
    env.stop_broker(env.svc.coordinator_of("g"))
    env.join_new()
    env.advance(60_000)
    return [json.dumps(e.to_dict(), sort_keys=True) for e in env.records]


def test_every_record_round_trips_through_json():
    env = Env()
    ids, leader, gen = env.stable_group(2, session=20_000)
    env.commit("g", gen, leader, {("foo", 0): 3}, metadata="meta")
    env.join(member_id=leader, session=20_000)
    env.join(instance="s1")
    env.join(instance="s1")
    env.join()
    env.advance(60_000)
    env.delete_groups("g")
    env.commit("x", -1, "", {("foo", 0): 1})
    env.offset_delete("x", {"foo": [0]})
    env.stop_broker(env.svc.coordinator_of("g"))
    seen = set()
    for e in env.records:
        d = json.loads(json.dumps(e.to_dict()))
        assert d["v"] == SCHEMA_VERSION and d["type"] == e.record.TYPE
        assert LogEntry.from_dict(d) == e
        seen.add(e.record.TYPE)
    # Every classic-group record type; the KIP-848 ones (not written by a handler yet) round-trip in
    # tests/coordinator/consumer_group/test_cg_records.py.
    assert seen == set(RECORD_TYPES) - {t.TYPE for t in CONSUMER_GROUP_RECORD_TYPES}


def test_log_entries_have_offsets_and_timestamps():
    env = Env()
    env.advance(1234)
    env.join_new()
    log = env.shard("g").log
    assert [e.offset for e in log] == list(range(len(log)))
    assert all(e.timestamp_ms == 1234 for e in log if e.record.group_id == "g")


def test_same_inputs_same_seed_give_a_byte_identical_log():
    assert _scenario(5) == _scenario(5)
    assert _scenario(5) != _scenario(6)  # member ids come from the seed


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

    def test_the_invariant_check_sees_a_change_made_without_a_record(self):
        """The harness asserts state == replay after every call; that check must be able to fail."""
        env = Env()
        env.stable_group(2)
        assert env.svc.state_replay_mismatches() == []
        env.group().generation_id += 1  # a write that bypasses the records
        mismatches = env.svc.state_replay_mismatches()
        assert len(mismatches) == 1 and "'g' generation_id: live 2 != replayed 1" in mismatches[0]


def _everything(env: Env) -> tuple:
    """All a shard holds that an operation may change, comparable."""
    shard = env.shard()
    rt = shard.runtime
    return (state_snapshot(rt.state), len(shard.log), shard.timers.snapshot(), dict(rt.parked_joins._by_member),
            dict(rt.parked_syncs._by_member), env.svc._rng.getstate())


class TestRollback:
    """``CoordinatorRuntime.run``: an operation that raises leaves nothing behind -- no log entry, no state change,
    no timer or parked-request change, no UUID drawn -- and the exception reaches the driver."""

    def test_a_join_that_raises_midway_is_rolled_back(self, monkeypatch):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)  # Stable leader rejoins: PreparingRebalance, join parked, join timer armed
        before = _everything(env)

        def boom(self):
            raise RuntimeError("select_protocol failed")

        # The follower's rejoin appends MemberRejoined, parks, cancels the join timer, then fails while completing
        # the join phase.
        monkeypatch.setattr(ClassicGroup, "select_protocol", boom)
        with pytest.raises(RuntimeError, match="select_protocol failed"):
            env.join(member_id=follower)
        assert _everything(env) == before
        monkeypatch.undo()
        rid = env.join(member_id=follower)  # the same request now completes the join phase
        assert env.resp(rid).generation_id == gen + 1 and env.state() == "CompletingRebalance"

    def test_the_uuid_generator_is_rewound(self, monkeypatch):
        control = Env()
        expected = control.resp(control.join()).member_id  # the first member id this seed hands out

        env = Env()
        original = CoordinatorRuntime.append

        def fail_on_pending_member(self, rec):
            if isinstance(rec, R.PendingMemberAdded):
                raise RuntimeError("append failed")
            return original(self, rec)

        monkeypatch.setattr(CoordinatorRuntime, "append", fail_on_pending_member)
        with pytest.raises(RuntimeError):
            env.join()  # draws a member id (and appends the new group's record), then fails
        assert env.state() == "Dead"  # the group it created is gone too
        monkeypatch.undo()
        assert env.resp(env.join()).member_id == expected

    def test_a_load_that_raises_leaves_the_partition_unloaded(self, monkeypatch):
        log = PartitionLog(0, [R.LogEntry(0, 0, 5, R.GroupMetadata(group_id="g", protocol_type="consumer"))])
        shard = GroupCoordinatorShard(0, log, CoordinatorConfig(), broker_id=1, new_uuid=lambda: "u")

        def boom(self):
            raise RuntimeError("on_loaded failed")

        monkeypatch.setattr(ClassicGroupManager, "on_loaded", boom)
        with pytest.raises(RuntimeError):
            shard.load(10, leader_epoch=1)
        assert (list(shard.groups), len(shard.log), shard.timers.snapshot(), shard.runtime.loaded) == \
            ([], 1, {}, False)
        monkeypatch.undo()
        shard.load(10, leader_epoch=1)
        assert [g.group_id for g in shard.groups] == ["g"] and len(shard.log) == 2

    def test_a_kafka_error_raised_on_purpose_is_answered_and_changes_nothing(self):
        """``OperationError``: testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException -> the
        operation fails, the request gets UNKNOWN_SERVER_ERROR."""
        env = Env()
        pending = env.resp(env.join()).member_id
        before = _everything(env)
        r = env.resp(env.join(member_id=pending, instance="group-instance-id"))
        assert (E(r.error_code), r.member_id) == (E.UNKNOWN_SERVER_ERROR, "")
        assert _everything(env) == before


def test_output_answer_of_a_parked_request_and_of_one_answered_in_the_same_call():
    """``Output.answer``: the leader's rejoin in Stable is parked (PARKED, nothing in ``responses`` for it); the last
    member to rejoin completes the join phase, so its own JoinGroup is parked *and* answered within the call: its
    answer is the response, and the leader's parked JoinGroup is released in the same output."""
    env = Env()
    leader, follower, gen = two_member_stable(env)
    broker = env.svc.coordinator_of("g")

    def join(rid, member_id):
        req = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                               member_id=member_id, protocol_type="consumer",
                               protocols=[JoinGroupRequest.Protocol(name="range", metadata=sub("foo"))])
        return env.svc.handle(broker, req, RequestContext(rid, 9), env.now)

    out = join(1001, leader)
    assert out.answer is PARKED and out.responses == []
    out = join(1002, follower)
    assert out.answer is not PARKED and out.answer.generation_id == gen + 1
    answers = dict(out.responses)
    assert answers[1002] is out.answer and answers[1001].leader == leader and answers[1001].members


class TestRecordTransitions:
    """Applying a record moves the state machine as ``RECORD_TRANSITIONS`` says, and only where Kafka's
    ``ClassicGroupState.validPreviousStates`` allows (kafka-classic-group-protocol.md section 3): the expectations
    below are Kafka's transition table, not a copy of kgroup's."""

    @staticmethod
    def group_in(state: str) -> Groups:
        groups = Groups()
        groups.apply(R.GroupMetadata(group_id="g"), 0)  # Empty
        member = R.MemberJoined(group_id="g", member_id="m", protocol_type="consumer", protocols=(("range", b""),))
        if state == "Empty":
            return groups
        groups.apply(member, 1)
        groups.apply(R.RebalanceStarted(group_id="g", initial=True), 1)
        if state == "PreparingRebalance":
            return groups
        groups.apply(R.JoinCompleted(group_id="g", generation_id=1, protocol_name="range", leader="m",
                                     members=("m",)), 2)
        if state == "CompletingRebalance":
            return groups
        groups.apply(groups.get("g").to_group_metadata({"m": b"a"}), 3)
        assert state == "Stable"
        return groups

    @pytest.mark.parametrize("state,legal", [("Empty", True), ("PreparingRebalance", False),
                                             ("CompletingRebalance", True), ("Stable", True)])
    def test_rebalance_started(self, state, legal):
        # PreparingRebalance <- Stable, CompletingRebalance, Empty
        groups = self.group_in(state)
        rec = R.RebalanceStarted(group_id="g")
        if not legal:
            with pytest.raises(IllegalStateTransition):
                groups.apply(rec, 10)
            return
        groups.apply(rec, 10)
        g = groups.get("g")
        assert (str(g.state), str(g.previous_state), g.current_state_timestamp_ms) == \
            ("PreparingRebalance", state, 10)

    @pytest.mark.parametrize("state", ["Empty", "CompletingRebalance", "Stable"])
    def test_join_completed_only_from_preparing_rebalance(self, state):
        # CompletingRebalance <- PreparingRebalance; Empty <- PreparingRebalance
        groups = self.group_in(state)
        with pytest.raises(IllegalStateTransition):
            groups.apply(R.JoinCompleted(group_id="g", generation_id=2, protocol_name="range", leader="m",
                                         members=tuple(groups.get("g").members)), 10)

    def test_join_completed_without_members_empties_the_group(self):
        groups = self.group_in("PreparingRebalance")
        groups.apply(R.MemberRemoved(group_id="g", member_id="m"), 5)
        groups.apply(R.JoinCompleted(group_id="g", generation_id=1), 6)
        assert (str(groups.get("g").state), groups.get("g").generation_id) == ("Empty", 1)

    @pytest.mark.parametrize("state,after", [("CompletingRebalance", "Stable"), ("Stable", "Stable"),
                                             ("Empty", "Empty")])
    def test_group_metadata_makes_completing_rebalance_stable_and_nothing_else_moves(self, state, after):
        groups = self.group_in(state)
        g = groups.get("g")
        before = g.current_state_timestamp_ms
        groups.apply(g.to_group_metadata(), 20)
        assert str(g.state) == after
        assert g.current_state_timestamp_ms == (20 if state != after else before)

    @pytest.mark.parametrize("state", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"])
    def test_tombstone_from_any_state_is_dead(self, state):
        groups = self.group_in(state)
        g = groups.get("g")
        groups.apply(R.GroupTombstone(group_id="g"), 30)
        assert str(g.state) == "Dead" and groups.get("g") is None
