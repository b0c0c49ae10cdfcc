"""A fake-clock harness for KIP-848 consumer groups on the whole coordinator (``GroupCoordinatorService``): Kafka's
``GroupMetadataManagerTestContext`` in Python.

* one broker, one ``__consumer_offsets`` partition: every group lives on shard 0 (routing is tested elsewhere);
* the clock starts at 1000 ms, as Kafka's test context's ``MockTime(0, 1000, 1000)``;
* the server assignor is :class:`MockAssignor` (Kafka's ``MockPartitionAssignor``: it answers what the test
  prepared) unless a test asks for Kafka's real ones (``real_assignors=True``); ``group.consumer.assignors`` is
  ``range`` then, as in Kafka's test context;
* topics come from the cluster model (``topics={"foo": 6, "bar": 3}``) with kgroup's stable topic ids
  (:meth:`CgEnv.tid`); the coordinator's metadata image leaves ``__consumer_offsets`` out, as the images of Kafka's
  tests do (a real broker's image holds it, and kgroup's coordinator sees it outside these tests);
* after **every** call the harness checks that the shard's live state equals the replay of its log (the state
  changed only by records, and the records say everything) -- the invariant of every coordinator test here;
* :meth:`CgEnv.replay` writes records into the log as Kafka's tests ``context.replay(...)`` them (``ConsumerGroupBuilder``
  is :meth:`CgEnv.build_group`).

Expected values in the tests that use it come from Kafka's tests (each case names the one it ports), never from
running kgroup.
"""

from __future__ import annotations

from typing import Any, Iterable

from protocol.errors import ErrorCode
from protocol.messages import (ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ListGroupsRequest,
                               OffsetCommitRequest, OffsetFetchRequest)
from protocol.uuids import uuid_from_string, uuid_to_string

from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator import records as R
from coordinator.cluster import topic_id
from coordinator.consumer_group import (ConsumerGroupMember, current_assignment_record, member_metadata_record,
                                        target_assignment_record)
from coordinator.metadata_image import compute_metadata_hash

E = ErrorCode
DEFAULT_CLIENT_ID = "client"
DEFAULT_CLIENT_ADDRESS = "/127.0.0.1"


class MockAssignor:
    """``MockPartitionAssignor``: returns the prepared assignment (member -> topic id -> partitions) for every call
    until another is prepared; remembers each call's members and subscription type."""

    def __init__(self) -> None:
        self.prepared: dict[str, dict[str, Iterable[int]]] = {}
        self.calls: list[tuple[str, dict, str]] = []
        self.error: Exception | None = None

    def prepare(self, assignment: dict[str, dict[str, Iterable[int]]]) -> None:
        self.prepared = assignment

    def __call__(self, name: str, members: dict, topics: dict, *, subscription_type: str) -> dict:
        self.calls.append((name, members, subscription_type))
        if self.error is not None:
            raise self.error
        return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in self.prepared.items()}


class CgEnv:
    def __init__(self, topics: dict[str, int] | None = None, *, real_assignors: bool = False, start_ms: int = 1000,
                 racks: bool = False, brokers: int = 1, **settings: Any) -> None:
        # Kafka's GroupMetadataManager tests bypass the service's JoinGroup session-timeout bounds.
        conf = {"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": brokers,
                "group.min.session.timeout.ms": 100, "group.initial.rebalance.delay.ms": 0}
        if not real_assignors:
            conf["group.consumer.assignors"] = "range"
        conf.update(settings)
        self.config = CoordinatorConfig.create(conf)
        self.assignor = None if real_assignors else MockAssignor()
        self.svc = GroupCoordinatorService(num_brokers=brokers, config=self.config, seed=7, start_ms=start_ms,
                                           consumer_assignor=self.assignor)
        if racks:
            for b in self.svc.cluster.brokers.values():
                b.rack = f"rack{b.broker_id}"
        for name, n in (topics if topics is not None else {"foo": 6, "bar": 3}).items():
            self.svc.cluster.create_topic(name, n, 1)
        self.pin_image()
        self.now = start_ms
        self._rid = 0
        self.last_records: list[R.Record] = []

    # --- plumbing --------------------------------------------------------------------------------------------

    @staticmethod
    def tid(name: str) -> str:
        return uuid_to_string(topic_id(name))

    def _check(self, out) -> None:
        mismatches = self.svc.state_replay_mismatches()
        assert not mismatches, "live state != replay of the log:\n" + "\n".join(mismatches)
        self.last_records = [e.record for e in out.records]
        self.last_output = out

    def send(self, req: Any, version: int, client_id: str = DEFAULT_CLIENT_ID) -> Any:
        self._rid += 1
        out = self.svc.handle(self.svc.coordinator_of("any"), req, RequestContext(self._rid, version, client_id=client_id,
                                                     client_host=DEFAULT_CLIENT_ADDRESS), self.now)
        self._check(out)
        return out.answer

    def advance(self, ms: int) -> list[R.Record]:
        """Move the clock (timers fire at their deadlines); the records the timers wrote."""
        self.now += ms
        out = self.svc.poll(self.now)
        self._check(out)
        return self.last_records

    def failover(self) -> list[R.Record]:
        """Move the coordinator to the other broker (``brokers=2``): the new leader loads the partition from its log
        (``onLoaded``: timers re-armed) with fresh in-memory state. Returns the records of the move."""
        old = self.svc.coordinator_of("any")
        out = self.svc.move_coordinator("any", 1 - old, self.now)
        self.pin_image()
        self._check(out)
        return self.last_records

    def pin_image(self) -> None:
        """The coordinator's image: the cluster's topics but ``__consumer_offsets`` (see the module docstring);
        call again after changing topics or moving the coordinator."""
        from coordinator.cluster import OFFSETS_TOPIC
        from coordinator.metadata_image import MetadataImage

        full = MetadataImage.from_cluster(self.svc.cluster)
        mgr = self.manager
        mgr.cluster = None
        mgr.set_image(MetadataImage(full.version, [t for t in full.topics.values() if t.name != OFFSETS_TOPIC]))

    @property
    def shard(self):
        return self.svc.shard_for("any")

    @property
    def manager(self):
        return self.shard.consumer

    def replay(self, *records: R.Record) -> None:
        """Kafka's ``context.replay(record)``: the records are written to the log (one operation) and replayed."""
        rt = self.shard.runtime

        def write(recs):
            for r in recs:
                rt.append(r)
        result = rt.run(self.now, None, write, list(records))
        assert result.records or not records

    def build_group(self, group_id: str, epoch: int, *, members: Iterable[ConsumerGroupMember] = (),
                    assignments: dict[str, dict[str, Iterable[int]]] | None = None, assignment_epoch: int = 1,
                    assignment_timestamp_ms: int = 0, metadata_hash: int = 0,
                    regexes: dict[str, tuple[Iterable[str], int, int]] | None = None) -> None:
        """``ConsumerGroupBuilder.build()``: member metadata, resolved regexes, the group epoch, target
        assignments, the target assignment metadata, current assignments -- in that order."""
        members = list(members)
        recs: list[R.Record] = [member_metadata_record(group_id, m) for m in members]
        for regex, (topics, version, ts) in (regexes or {}).items():
            recs.append(R.ConsumerGroupRegularExpression(group_id, regular_expression=regex,
                                                         topics=tuple(sorted(topics)), version=version,
                                                         timestamp_ms=ts))
        recs.append(R.ConsumerGroupMetadata(group_id, epoch=epoch, metadata_hash=metadata_hash))
        for mid, a in (assignments or {}).items():
            recs.append(target_assignment_record(group_id, mid, {t: sorted(ps) for t, ps in a.items()}))
        recs.append(R.ConsumerGroupTargetAssignmentMetadata(group_id, assignment_epoch=assignment_epoch,
                                                            assignment_timestamp_ms=assignment_timestamp_ms))
        recs += [current_assignment_record(group_id, m) for m in members]
        self.replay(*recs)

    def metadata_hash(self, *topics: str) -> int:
        """``computeGroupHash`` of these topics' hashes (kgroup's hash function, see coordinator.metadata_image)."""
        return compute_metadata_hash(topics, self.manager.image)

    # --- requests --------------------------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, *, instance_id: str | None = None,
                  rack_id: str | None = None, rebalance_timeout_ms: int = -1, names: list[str] | None = None,
                  regex: str | None = None, assignor: str | None = None,
                  owned: dict[str, Iterable[int]] | None = None, version: int = 1,
                  client_id: str = DEFAULT_CLIENT_ID) -> Any:
        Q = ConsumerGroupHeartbeatRequest
        req = Q(group_id=group_id, member_id=member_id, member_epoch=member_epoch, instance_id=instance_id,
                rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms, subscribed_topic_names=names,
                subscribed_topic_regex=regex if version >= 1 else None, server_assignor=assignor,
                topic_partitions=None if owned is None else [
                    Q.TopicPartitions(topic_id=uuid_from_string(t), partitions=list(ps)) for t, ps in owned.items()])
        return self.send(req, version, client_id)

    def heartbeat_error(self, *args: Any, **kw: Any) -> tuple[ErrorCode, str | None]:
        """A heartbeat that must fail: (error, message); it must not write anything (timers due now fire first)."""
        self.advance(0)
        r = self.heartbeat(*args, **kw)
        assert r.error_code != 0, r
        assert not self.last_records, "a failed heartbeat wrote records"
        return ErrorCode(r.error_code), r.error_message

    def describe(self, *group_ids: str, version: int = 1) -> list[Any]:
        return self.send(ConsumerGroupDescribeRequest(group_ids=list(group_ids)), version).groups

    def list_groups(self, states=(), types=(), version: int = 5) -> list[tuple[str, str, str, str]]:
        r = self.send(ListGroupsRequest(states_filter=list(states), types_filter=list(types)), version)
        return [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups]

    def commit(self, group_id: str, member_id: str, epoch: int, offsets: dict[tuple[str, int], int], *,
               version: int = 9, metadata: str = "") -> dict[tuple[str, int], ErrorCode]:
        by_topic: dict[str, list] = {}
        for (t, p), o in offsets.items():
            by_topic.setdefault(t, []).append(OffsetCommitRequest.Topic.Partition(
                partition_index=p, committed_offset=o, committed_metadata=metadata))
        r = self.send(OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=epoch, member_id=member_id,
                                          topics=[OffsetCommitRequest.Topic(name=t, partitions=ps)
                                                  for t, ps in by_topic.items()]), version)
        return {(t.name, p.partition_index): ErrorCode(p.error_code) for t in r.topics for p in t.partitions}

    def fetch(self, group_id: str, member_id: str | None, epoch: int, topics: dict[str, list[int]] | None = None,
              version: int = 9) -> Any:
        req = OffsetFetchRequest(groups=[OffsetFetchRequest.Group(
            group_id=group_id, member_id=member_id, member_epoch=epoch,
            topics=None if topics is None else [OffsetFetchRequest.Group.Topic(name=t, partition_indexes=ps)
                                                for t, ps in topics.items()])])
        return self.send(req, version).groups[0]

    # --- views -----------------------------------------------------------------------------------------------

    def group(self, group_id: str):
        return self.svc.consumer_group(group_id)

    def member(self, group_id: str, member_id: str) -> ConsumerGroupMember:
        return self.group(group_id).members[member_id]

    def timers(self) -> dict[str, int]:
        return {k: v for k, v in self.shard.timers.snapshot().items() if k != "offsets-retention"}


def assignment_of(resp: Any) -> dict[str, list[int]] | None:
    """A heartbeat response's assignment as topic id (string) -> partitions; None when absent."""
    if resp.assignment is None:
        return None
    return {uuid_to_string(tp.topic_id): sorted(tp.partitions) for tp in resp.assignment.topic_partitions}


def norm(records: Iterable[R.Record]) -> list:
    """Records in a comparable form: a target assignment's partitions as sets (Kafka's assertRecordsEquals compares
    the assignment maps)."""
    out = []
    for r in records:
        if isinstance(r, R.ConsumerGroupTargetAssignmentMember):
            out.append((type(r).__name__, r.group_id, r.member_id,
                        frozenset((tp.topic_id, frozenset(tp.partitions)) for tp in r.topic_partitions)))
        else:
            out.append(r)
    return out


def assert_records(expected: Iterable[R.Record], actual: Iterable[R.Record]) -> None:
    assert norm(actual) == norm(expected)


def assert_unordered_records(expected_groups: list[list[R.Record]], actual: list[R.Record]) -> None:
    """Kafka's ``assertUnorderedRecordsEquals``: consecutive groups whose records may come in any order."""
    i = 0
    for group in expected_groups:
        got = actual[i:i + len(group)]
        assert sorted(map(repr, norm(got))) == sorted(map(repr, norm(group))), (group, got)
        i += len(group)
    assert i == len(actual), actual[i:]


# --- classic requests (mixed groups) ------------------------------------------------------------------------------

def _classic_api(env: CgEnv):
    from protocol.messages import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
    return JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest


def classic_join(env: CgEnv, group_id: str, member_id: str, protocols: list[tuple[str, bytes]], *,
                 instance_id: str | None = None, session_timeout_ms: int = 5000, rebalance_timeout_ms: int = 10000,
                 version: int = 9, protocol_type: str = "consumer") -> Any:
    J = _classic_api(env)[0]
    return env.send(J(group_id=group_id, session_timeout_ms=session_timeout_ms,
                      rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=instance_id,
                      protocol_type=protocol_type,
                      protocols=[J.Protocol(name=n, metadata=m) for n, m in protocols]), version)


def classic_sync(env: CgEnv, group_id: str, member_id: str, generation: int, *, instance_id: str | None = None,
                 protocol_name: str | None = "range", protocol_type: str | None = "consumer",
                 version: int = 5) -> Any:
    S = _classic_api(env)[1]
    return env.send(S(group_id=group_id, generation_id=generation, member_id=member_id,
                      group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
                      assignments=[]), version)


def classic_heartbeat(env: CgEnv, group_id: str, member_id: str, generation: int, *, instance_id: str | None = None,
                      version: int = 4) -> Any:
    H = _classic_api(env)[2]
    return env.send(H(group_id=group_id, generation_id=generation, member_id=member_id,
                      group_instance_id=instance_id), version)


def classic_leave(env: CgEnv, group_id: str, members: list[tuple[str, str | None]], version: int = 5) -> Any:
    L = _classic_api(env)[3]
    return env.send(L(group_id=group_id, members=[L.MemberIdentity(member_id=m, group_instance_id=i)
                                                  for m, i in members]), version)
