"""Compaction of the KIP-848 consumer group records (coordinator/log.py, Kafka's LogCleaner on
``__consumer_offsets``): every ``ConsumerGroup*`` record is compacted by its Kafka record key (the record type and
the group id, plus the member id or the regular expression where the key has one) and a tombstone is dropped
once it is older than ``log.cleaner.delete.retention.ms``.

The groups here churn through the whole coordinator (``GroupCoordinatorService`` driven by ConsumerGroupHeartbeat
requests, members joining by topic names or a regex, reconciling, committing and leaving, sessions expiring); the
harness checks that the live state equals the replay of the log (after every 10th call and every compaction). On top of that these tests check that the durable load of
the compacted log is the durable load of the whole history, that the log's size follows the live members and not
the history, and that a coordinator taking over the partition (failover) loads the same groups."""

from __future__ import annotations

import random
import uuid

from cg_env import CgEnv, assignment_of

from coordinator import records as R
from coordinator.log import compact_durable, compaction_key, is_tombstone
from coordinator.replay import load_durable, state_snapshot

TOPICS = {"foo": 6, "bar": 3}


def order_free(snapshot: dict) -> dict:
    """A state snapshot with the ``TimelineHashMap`` iteration orders of consumer groups taken out (members,
    resolved regexes, server assignor counts): that order depends on the map's history, which a compacted log does
    not hold (coordinator/log.py, ``compact_durable``); everything else must be equal."""
    out = dict(snapshot)
    out["consumer_groups"] = {
        gid: dict(g, members=dict(g["members"]), resolved_regular_expressions=dict(g["resolved_regular_expressions"]),
                  server_assignors=dict(g["server_assignors"]))
        for gid, g in snapshot["consumer_groups"].items()}
    return out


class Churn:
    """Members of KIP-848 groups joining, heartbeating with what they own, committing and leaving, at random; every
    record the coordinator writes is also kept here (the history that compaction drops)."""

    def __init__(self, env: CgEnv, seed: int, groups=("g1", "g2")) -> None:
        self.env, self.rng, self.groups = env, random.Random(seed), groups
        self.members: dict[tuple[str, str], tuple[int, dict[str, list[int]]]] = {}  # -> (epoch, owned)
        self.history: list[R.LogEntry] = []
        self.heartbeats = 0

    def _collect(self) -> None:
        self.history.extend(self.env.last_output.records)

    def join(self, gid: str) -> None:
        mid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        names = self.rng.choice([["foo"], ["foo", "bar"], ["bar"], None])  # None: a regex subscription
        regex = self.rng.choice(["fo.*", "b.*", ".*"]) if names is None else None
        r = self.env.heartbeat(gid, mid, 0, names=names or [], regex=regex, rebalance_timeout_ms=5000, owned={})
        self._collect()
        assert r.error_code == 0, r
        self.members[(gid, mid)] = (r.member_epoch, assignment_of(r) or {})

    def beat(self, gid: str, mid: str) -> None:
        epoch, owned = self.members[(gid, mid)]
        r = self.env.heartbeat(gid, mid, epoch, owned=owned)
        self._collect()
        self.heartbeats += 1
        if r.error_code != 0:  # fenced or unknown (its session expired): it rejoins as a new member
            del self.members[(gid, mid)]
            return
        a = assignment_of(r)
        self.members[(gid, mid)] = (r.member_epoch, owned if a is None else a)

    def leave(self, gid: str, mid: str) -> None:
        self.env.heartbeat(gid, mid, -1)
        self._collect()
        del self.members[(gid, mid)]

    def commit(self, gid: str, mid: str) -> None:
        epoch, owned = self.members[(gid, mid)]
        offsets = {(name, p): self.rng.randrange(10 ** 6)
                   for name in TOPICS for tid in [CgEnv.tid(name)] for p in owned.get(tid, [])}
        if offsets:
            self.env.commit(gid, mid, epoch, offsets)
            self._collect()

    def step(self) -> None:
        gid = self.rng.choice(self.groups)
        mine = [m for (g, m) in self.members if g == gid]
        x = self.rng.random()
        if not mine or (x < 0.08 and len(mine) < 6):
            self.join(gid)
        elif x < 0.14 and len(mine) > 1:
            self.leave(gid, self.rng.choice(mine))
        elif x < 0.30:
            self.commit(gid, self.rng.choice(mine))
        else:
            for m in mine:
                self.beat(gid, m)
        self.env.advance(self.rng.choice([10, 100, 1000]))
        self._collect()

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()


class SampledEnv(CgEnv):
    """The harness, checking "live state == replay of the log" after every 10th call and after every compaction
    (the check replays the log since the checkpoint: after every call it would dominate these long churns)."""

    calls = 0
    seen_compactions = 0

    def _check(self, out) -> None:
        self.calls += 1
        compactions = sum(lg.compactions for lg in self.svc.logs.values())
        if self.calls % 10 == 0 or compactions != self.seen_compactions:
            self.seen_compactions = compactions
            super()._check(out)
        else:
            self.last_records = [e.record for e in out.records]
            self.last_output = out


def _env(min_records: int = 200, retention_ms: int = 60_000, brokers: int = 1) -> CgEnv:
    return SampledEnv(TOPICS, real_assignors=True, brokers=brokers,
                 **{"kgroup.offsets.compaction.min.records": min_records,
                    "log.cleaner.delete.retention.ms": retention_ms,
                    "group.consumer.session.timeout.ms": 45_000})


def test_consumer_group_records_are_keyed_as_kafka_keys_them():
    g = "g"
    assert compaction_key(R.ConsumerGroupMetadata(g, epoch=3)) == compaction_key(R.ConsumerGroupMetadataTombstone(g))
    assert compaction_key(R.ConsumerGroupMemberMetadata(g, member_id="a")) == \
        compaction_key(R.ConsumerGroupMemberMetadataTombstone(g, member_id="a")) != \
        compaction_key(R.ConsumerGroupMemberMetadata(g, member_id="b"))
    # one key per record type: a member's metadata, target and current assignment are three keys
    member_keys = {compaction_key(t(g, member_id="a")) for t in (
        R.ConsumerGroupMemberMetadata, R.ConsumerGroupTargetAssignmentMember, R.ConsumerGroupCurrentMemberAssignment)}
    assert len(member_keys) == 3
    assert compaction_key(R.ConsumerGroupRegularExpression(g, regular_expression="a.*")) == \
        compaction_key(R.ConsumerGroupRegularExpressionTombstone(g, regular_expression="a.*"))
    assert compaction_key(R.ConsumerGroupTargetAssignmentMetadata(g)) != compaction_key(R.ConsumerGroupMetadata(g))
    # a classic group's metadata key (type 2) is not the consumer group's (type 3)
    assert compaction_key(R.GroupMetadata(g)) != compaction_key(R.ConsumerGroupMetadata(g))
    assert compaction_key(R.ConsumerGroupMetadata("h")) != compaction_key(R.ConsumerGroupMetadata(g))


def test_a_removed_member_leaves_nothing_once_its_tombstones_are_older_than_delete_retention():
    def e(i, ts, rec):
        return R.LogEntry(0, i, ts, rec)
    g, m = "g", "m1"
    log = [e(0, 0, R.ConsumerGroupMetadata(g, epoch=1)),
           e(1, 0, R.ConsumerGroupMemberMetadata(g, member_id=m, subscribed_topic_names=("foo",))),
           e(2, 0, R.ConsumerGroupMetadata(g, epoch=2)),
           e(3, 0, R.ConsumerGroupTargetAssignmentMember(g, member_id=m)),
           e(4, 0, R.ConsumerGroupTargetAssignmentMetadata(g, assignment_epoch=2)),
           e(5, 0, R.ConsumerGroupCurrentMemberAssignment(g, member_id=m, member_epoch=2, previous_member_epoch=0)),
           e(6, 10, R.ConsumerGroupCurrentMemberAssignmentTombstone(g, member_id=m)),
           e(7, 10, R.ConsumerGroupTargetAssignmentMemberTombstone(g, member_id=m)),
           e(8, 10, R.ConsumerGroupMemberMetadataTombstone(g, member_id=m)),
           e(9, 10, R.ConsumerGroupMetadata(g, epoch=3))]
    young = compact_durable(log, 50, 100)
    assert [x.offset for x in young] == [4, 6, 7, 8, 9]  # latest per key; the tombstones are young: kept
    old = compact_durable(log, 200, 100)
    assert [x.offset for x in old] == [4, 9]  # the member is gone for good
    for c in (young, old):
        assert state_snapshot(load_durable(c)) == state_snapshot(load_durable(log))
    assert load_durable(old).consumer_groups.get(g).group_epoch == 3 and not load_durable(old).consumer_groups.get(
        g).members


def test_churning_groups_compact_to_their_live_members_and_load_the_same_state():
    env = _env()
    churn = Churn(env, seed=848)
    churn.run(1000)
    log = env.shard.log
    assert churn.heartbeats > 2000
    assert any(isinstance(e.record, R.ConsumerGroupRegularExpression) for e in churn.history)
    assert log.compactions >= 5
    live = state_snapshot(env.shard.runtime.state)
    # the durable load of the compacted log is the durable load of the whole history (member order aside)
    compacted = log.entries[:log.clean]
    assert order_free(state_snapshot(load_durable(log.entries))) == order_free(state_snapshot(
        load_durable(churn.history)))
    # and of the consumer groups it is what the coordinator has live
    assert order_free(state_snapshot(load_durable(log.entries)))["consumer_groups"] == \
        order_free(live)["consumer_groups"]
    # the compacted part holds the live keys only: per live member at most 3 records (metadata, target and
    # current assignment), per group its epoch, target metadata, resolved regexes, committed offsets; plus young
    # tombstones
    members = sum(len(g.members) for g in env.shard.runtime.state.consumer_groups)
    offsets = sum(len(v) for v in live["offsets"].values())
    young = [e for e in compacted if e.timestamp_ms > env.now - 60_000]
    regexes = sum(len(g.resolved_regular_expressions) for g in env.shard.runtime.state.consumer_groups)
    assert len(compacted) - len(young) <= 3 * members + 2 * len(churn.groups) + regexes + offsets
    total = len(churn.history)
    assert total > 20 * len(compacted), (total, len(compacted))


def test_compacted_log_after_delete_retention_follows_the_live_members_only():
    env = _env(retention_ms=1_000)
    churn = Churn(env, seed=14)
    churn.run(500)
    env.advance(5_000)  # every tombstone is older than delete.retention.ms now
    env.shard.log.compact(env.shard.runtime.state, env.now)
    log = env.shard.log
    state = env.shard.runtime.state
    members = sum(len(g.members) for g in state.consumer_groups)
    offsets = sum(len(v) for v in state_snapshot(state)["offsets"].values())
    kinds = [type(e.record) for e in log.entries]
    assert not [k for k in kinds if k.__name__.endswith("Tombstone") and k.__name__.startswith("ConsumerGroup")]
    assert kinds.count(R.ConsumerGroupMemberMetadata) == members
    assert kinds.count(R.ConsumerGroupCurrentMemberAssignment) == members
    regexes = sum(len(g.resolved_regular_expressions) for g in state.consumer_groups)
    assert kinds.count(R.ConsumerGroupRegularExpression) == regexes
    assert len(log.entries) <= 3 * members + 2 * len(churn.groups) + regexes + offsets
    assert order_free(state_snapshot(load_durable(log.entries))) == order_free(state_snapshot(
        load_durable(churn.history)))


def test_failover_after_compaction_loads_the_same_epochs_assignments_and_members():
    env = _env(brokers=2)
    churn = Churn(env, seed=7)
    churn.run(400)
    assert env.shard.log.compactions >= 2
    before = order_free(state_snapshot(env.shard.runtime.state))["consumer_groups"]
    env.failover()  # the new leader loads the compacted log
    after = order_free(state_snapshot(env.shard.runtime.state))["consumer_groups"]
    assert after == before
    for gid, g in before.items():
        assert g["members"] and g["group_epoch"] > 1
    # and the members carry on where they were: their next heartbeats are answered at their epochs
    churn.run(200)


# --- logs of classic and consumer groups sharing group ids, as Kafka's flows write them ---------------------------

from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from coordinator.errors import IllegalStateError  # noqa: E402

_TPS = (("t", 0), ("t", 1))


@st.composite
def mixed_logs(draw):
    """A log of the groups "g" and "h" passing between no group, a simple group (created by a commit), a classic
    group and a consumer group the ways Kafka's coordinator moves them: DeleteGroups tombstones the offsets first, a
    conversion (either way) keeps them, expiry deletes only a group without offsets."""
    out: list[R.Record] = []
    kind: dict[str, str] = {}                 # group -> "simple" | "classic" | "consumer"
    members: dict[str, set[str]] = {}
    regexes: dict[str, set[str]] = {}
    offsets: dict[str, set] = {}

    def cg_tombstones(g):
        recs = [R.ConsumerGroupCurrentMemberAssignmentTombstone(g, member_id=m) for m in sorted(members[g])]
        recs += [R.ConsumerGroupTargetAssignmentMemberTombstone(g, member_id=m) for m in sorted(members[g])]
        recs += [R.ConsumerGroupTargetAssignmentMetadataTombstone(g)]
        recs += [R.ConsumerGroupMemberMetadataTombstone(g, member_id=m) for m in sorted(members[g])]
        recs += [R.ConsumerGroupRegularExpressionTombstone(g, regular_expression=x) for x in sorted(regexes[g])]
        recs += [R.ConsumerGroupPartitionMetadataTombstone(g), R.ConsumerGroupMetadataTombstone(g)]
        members[g], regexes[g] = set(), set()
        return recs

    for _ in range(draw(st.integers(0, 30))):
        g = draw(st.sampled_from(["g", "h"]))
        k = kind.get(g)
        op = draw(st.sampled_from(["commit", "commit", "odelete", "classic", "consumer", "member", "leave",
                                   "regex", "delete", "convert"]))
        if op == "commit":
            tp = draw(st.sampled_from(_TPS))
            out.append(R.OffsetCommit(g, topic=tp[0], partition=tp[1], offset=draw(st.integers(0, 9))))
            offsets.setdefault(g, set()).add(tp)
            kind.setdefault(g, "simple")
        elif op == "odelete" and offsets.get(g):
            tp = draw(st.sampled_from(sorted(offsets[g])))
            out.append(R.OffsetTombstone(g, topic=tp[0], partition=tp[1]))
            offsets[g].discard(tp)
        elif op == "classic" and k != "consumer":
            out.append(R.GroupMetadata(g, protocol_type="consumer", generation_id=draw(st.integers(1, 5))))
            kind[g] = "classic"
        elif op in ("consumer", "member", "regex") and k in (None, "simple", "consumer"):
            if k is None or k == "simple":
                members[g], regexes[g] = set(), set()
            if op == "consumer" or k != "consumer":
                out.append(R.ConsumerGroupMetadata(g, epoch=draw(st.integers(1, 9))))
                out.append(R.ConsumerGroupTargetAssignmentMetadata(g, assignment_epoch=draw(st.integers(1, 9))))
            if op == "member":
                m = draw(st.sampled_from(["m1", "m2", "m3"]))
                out.append(R.ConsumerGroupMemberMetadata(g, member_id=m, subscribed_topic_names=("t",)))
                out.append(R.ConsumerGroupCurrentMemberAssignment(g, member_id=m, member_epoch=draw(st.integers(1, 9))))
                members[g].add(m)
            elif op == "regex":
                x = draw(st.sampled_from(["a.*", "b.*"]))
                out.append(R.ConsumerGroupRegularExpression(g, regular_expression=x, topics=("t",)))
                regexes[g].add(x)
            kind[g] = "consumer"
        elif op == "leave" and k == "consumer" and members[g]:
            m = draw(st.sampled_from(sorted(members[g])))
            out += [R.ConsumerGroupCurrentMemberAssignmentTombstone(g, member_id=m),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(g, member_id=m),
                    R.ConsumerGroupMemberMetadataTombstone(g, member_id=m)]
            members[g].discard(m)
        elif op == "delete" and k is not None:  # DeleteGroups: the offsets first
            out += [R.OffsetTombstone(g, topic=t, partition=p) for t, p in sorted(offsets.get(g, ()))]
            offsets[g] = set()
            out += cg_tombstones(g) if k == "consumer" else [R.GroupTombstone(g)]
            del kind[g]
        elif op == "convert" and k == "consumer":  # to a classic group, offsets kept
            out += cg_tombstones(g)
            out.append(R.GroupMetadata(g, protocol_type="consumer", generation_id=1))
            kind[g] = "classic"
        elif op == "convert" and k == "classic":  # to a consumer group, offsets kept
            out.append(R.GroupTombstone(g))
            members[g], regexes[g] = set(), set()
            out += [R.ConsumerGroupMetadata(g, epoch=1), R.ConsumerGroupTargetAssignmentMetadata(g, assignment_epoch=1)]
            kind[g] = "consumer"
    ts, entries = 0, []
    for i, rec in enumerate(out):
        ts += draw(st.integers(0, 30))
        entries.append(R.LogEntry(0, i, ts, rec))
    return entries


@settings(max_examples=200, deadline=None)
@given(mixed_logs(), st.integers(0, 1000), st.integers(0, 100))
def test_durable_load_of_a_compacted_mixed_log_is_the_durable_load_of_the_log(entries, later_ms, retention):
    try:
        full = load_durable(entries)
    except IllegalStateError:
        assume(False)
    now = (entries[-1].timestamp_ms if entries else 0) + later_ms
    compacted = compact_durable(entries, now, retention)
    assert order_free(state_snapshot(load_durable(compacted))) == order_free(state_snapshot(full))
    assert compact_durable(compacted, now, retention) == compacted


# --- on disk: kgroup serve --data-dir --------------------------------------------------------------------------

def _env_on_disk(path, start_ms: int = 1000) -> CgEnv:
    import functools

    import cg_env

    from broker.storage import OffsetsLogStorage
    real = cg_env.GroupCoordinatorService
    cg_env.GroupCoordinatorService = functools.partial(real, storage=OffsetsLogStorage(path))
    try:
        return SampledEnv(TOPICS, real_assignors=True, start_ms=start_ms,
                     **{"kgroup.offsets.compaction.min.records": 200, "log.cleaner.delete.retention.ms": 1_000,
                        "group.consumer.session.timeout.ms": 45_000})
    finally:
        cg_env.GroupCoordinatorService = real


def test_a_restart_from_the_data_dir_loads_the_compacted_log_with_the_same_groups(tmp_path):
    from broker.storage import OffsetsLogStorage, read_entries
    env = _env_on_disk(tmp_path)
    churn = Churn(env, seed=4)
    churn.run(450)
    log = env.shard.log
    assert log.compactions >= 2
    before = order_free(state_snapshot(env.shard.runtime.state))
    for lg in env.svc.logs.values():
        lg.close()
    storage = OffsetsLogStorage(tmp_path)
    entries, _, next_offset, clean = storage.open(0)
    assert next_offset == log.next_offset and len(entries) - clean <= 200  # the records since the last compaction
    # the compacted part: the live keys, and the tombstones of the last second (log.cleaner.delete.retention.ms)
    state = env.shard.runtime.state
    live_keys = 3 * sum(len(g.members) for g in state.consumer_groups) + 2 * len(churn.groups) + sum(
        len(g.resolved_regular_expressions) for g in state.consumer_groups) + sum(
        len(v) for v in before["offsets"].values())
    values = [e for e in entries[:clean] if not is_tombstone(e.record)]
    assert len(values) <= live_keys, (clean, len(values), live_keys)
    # the history segments and the active one still hold every record once, in order (kgroup analyze reads them)
    offsets = [e.offset for _, _, p in storage.history_segments(0) for e in read_entries(p)]
    assert offsets + [e.offset for e in read_entries(storage.path(0))] == list(range(next_offset))
    env2 = _env_on_disk(tmp_path, start_ms=env.now)
    after = order_free(state_snapshot(env2.shard.runtime.state))
    assert after["consumer_groups"] == before["consumer_groups"] and after["offsets"] == before["offsets"]
    # the members go on heartbeating at the epochs they had, with what they own
    churn.env = env2
    for (gid, mid) in list(churn.members):
        epoch = churn.members[(gid, mid)][0]
        churn.beat(gid, mid)
        assert churn.members[(gid, mid)][0] >= epoch
