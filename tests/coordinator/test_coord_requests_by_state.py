"""The error-by-state matrix (kafka-classic-group-protocol.md section 5.12): every group API in every group state
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups), and
``validateMember`` + the generation check shared by SyncGroup, Heartbeat, OffsetCommit and LeaveGroup
(GroupMetadataManagerTest / OffsetMetadataManagerTest)."""

import pytest

from coord_harness import E, Env


def in_state(state: str) -> tuple[Env, str, int]:
    """A group 'g' in ``state`` and a valid (member, generation) of it (Empty/Dead: a former member)."""
    env = Env()
    if state == "Dead":  # unknown group
        return env, "nobody", 0
    ids, leader, gen = env.stable_group(2, session=60_000)
    follower = [m for m in ids if m != leader][0]
    if state == "Stable":
        return env, follower, gen
    if state == "PreparingRebalance":
        env.join(member_id=leader, session=60_000)
        return env, follower, gen
    if state == "CompletingRebalance":
        env.join(member_id=leader, session=60_000)
        env.join(member_id=follower, session=60_000)
        assert env.state() == "CompletingRebalance"
        return env, follower, gen + 1
    if state == "Empty":
        env.leave("g", [(leader, None), (follower, None)])
        assert env.state() == "Empty"
        return env, follower, gen + 1
    raise AssertionError(state)


STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


@pytest.mark.parametrize("state,expected", [
    ("Empty", E.UNKNOWN_MEMBER_ID), ("PreparingRebalance", E.REBALANCE_IN_PROGRESS),
    ("CompletingRebalance", None), ("Stable", E.NONE), ("Dead", E.UNKNOWN_MEMBER_ID)])
def test_sync_group_by_state(state, expected):
    env, member, gen = in_state(state)
    rid = env.sync("g", gen, member)
    if expected is None:
        assert env.resp(rid) is None  # parked until the leader's assignment
    else:
        assert env.err(rid) == expected


@pytest.mark.parametrize("state,expected", [
    ("Empty", E.UNKNOWN_MEMBER_ID), ("PreparingRebalance", E.REBALANCE_IN_PROGRESS),
    ("CompletingRebalance", E.NONE), ("Stable", E.NONE), ("Dead", E.UNKNOWN_MEMBER_ID)])
def test_heartbeat_by_state(state, expected):
    env, member, gen = in_state(state)
    assert env.err(env.heartbeat("g", gen, member)) == expected


@pytest.mark.parametrize("state,member_error", [
    ("Empty", E.UNKNOWN_MEMBER_ID), ("PreparingRebalance", E.NONE), ("CompletingRebalance", E.NONE),
    ("Stable", E.NONE), ("Dead", E.UNKNOWN_MEMBER_ID)])
def test_leave_group_by_state(state, member_error):
    env, member, gen = in_state(state)
    r = env.resp(env.leave("g", [(member, None)]))
    assert r.error_code == 0
    assert [(m.member_id, m.error_code) for m in r.members] == [(member, member_error)]


@pytest.mark.parametrize("state,expected", [
    ("Empty", E.UNKNOWN_MEMBER_ID), ("PreparingRebalance", E.NONE), ("CompletingRebalance", E.REBALANCE_IN_PROGRESS),
    ("Stable", E.NONE), ("Dead", E.GROUP_ID_NOT_FOUND)])
def test_offset_commit_as_member_by_state(state, expected):
    env, member, gen = in_state(state)
    assert env.commit_errors(env.commit("g", gen, member, {("foo", 0): 5})) == {("foo", 0): expected}


@pytest.mark.parametrize("state,expected", [
    ("Empty", E.NONE), ("PreparingRebalance", E.UNKNOWN_MEMBER_ID), ("CompletingRebalance", E.UNKNOWN_MEMBER_ID),
    ("Stable", E.UNKNOWN_MEMBER_ID), ("Dead", E.NONE)])
def test_offset_commit_without_member_by_state(state, expected):
    env, _, _ = in_state(state)
    assert env.commit_errors(env.commit("g", -1, "", {("foo", 0): 5})) == {("foo", 0): expected}


@pytest.mark.parametrize("state", STATES)
def test_offset_fetch_and_describe_never_fail(state):
    env, _, _ = in_state(state)
    assert env.fetched(env.fetch("g", {"foo": [0]})) == {("foo", 0): (-1, -1, "", E.NONE)}
    d = env.resp(env.describe("g")).groups[0]
    assert (d.error_code, d.group_state) == (0, state)


class TestMemberValidation:
    """validateMember + generation check, shared by Sync/Heartbeat/OffsetCommit/Leave."""

    @pytest.fixture
    def static_env(self):
        env = Env()
        r = [env.join(instance=f"i{k}", session=60_000) for k in range(2)]
        env.complete_join()
        a, b = env.resp(r[0]).member_id, env.resp(r[1]).member_id
        env.sync("g", 1, a, {a: b"A", b: b"B"}, instance="i0")
        env.sync("g", 1, b, instance="i1")
        return env, a, b

    @pytest.mark.parametrize("kind", ["sync", "heartbeat", "commit"])
    @pytest.mark.parametrize("case,expected", [
        ("unknown member", E.UNKNOWN_MEMBER_ID), ("wrong generation", E.ILLEGAL_GENERATION),
        ("other member's instance", E.FENCED_INSTANCE_ID), ("unknown instance", E.UNKNOWN_MEMBER_ID),
        ("ok", E.NONE)])
    def test_table(self, static_env, kind, case, expected):
        env, a, b = static_env
        member, gen, inst = {"unknown member": ("zzz", 1, None), "wrong generation": (a, 2, "i0"),
                             "other member's instance": (a, 1, "i1"), "unknown instance": (a, 1, "i9"),
                             "ok": (a, 1, "i0")}[case]
        if kind == "sync":
            rid = env.sync("g", gen, member, instance=inst)
            assert env.err(rid) == expected
        elif kind == "heartbeat":
            assert env.err(env.heartbeat("g", gen, member, instance=inst)) == expected
        else:
            assert env.commit_errors(env.commit("g", gen, member, {("foo", 1): 1}, instance=inst)) == \
                {("foo", 1): expected}

    def test_leave_batch(self, static_env):
        env, a, b = static_env
        r = env.resp(env.leave("g", [("zzz", None), (a, "i1"), ("", "i9"), ("", "i1")]))
        assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
            ("zzz", None, E.UNKNOWN_MEMBER_ID), (a, "i1", E.FENCED_INSTANCE_ID), ("", "i9", E.UNKNOWN_MEMBER_ID),
            ("", "i1", E.NONE)]
        assert list(env.group().members) == [a] and env.state() == "PreparingRebalance"


@pytest.mark.parametrize("state,expected", [
    ("Empty", E.UNKNOWN_MEMBER_ID), ("PreparingRebalance", E.NONE), ("CompletingRebalance", E.NONE),
    ("Stable", E.NONE), ("Dead", E.UNKNOWN_MEMBER_ID)])
def test_join_group_known_member_by_state(state, expected):
    env, member, gen = in_state(state)
    kw = {"session": 60_000} if state != "Dead" else {}
    rid = env.join(member_id=member, **kw)
    r = env.resp(rid)
    assert r.error_code == expected
    if state == "PreparingRebalance":
        # parked, and as the last member to rejoin it completes the (non-initial) join phase at once
        assert (r.generation_id, env.state()) == (gen + 1, "CompletingRebalance")
    elif expected == E.NONE:
        assert r.generation_id == gen and r.members == []  # the current generation, follower view


@pytest.mark.parametrize("state", STATES)
def test_join_group_new_dynamic_member_by_state(state):
    env, _, _ = in_state(state)
    before = env.state()
    r = env.resp(env.join())
    assert r.error_code == E.MEMBER_ID_REQUIRED
    assert env.state() == (before if state != "Dead" else "Empty")  # a pending member never rebalances


@pytest.mark.parametrize("state", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"])
def test_list_groups_reports_the_state(state):
    env, _, _ = in_state(state)
    r = env.resp(env.list_groups(env.svc.coordinator_of("g")))
    assert [(g.group_id, g.group_state) for g in r.groups] == [("g", state)]
