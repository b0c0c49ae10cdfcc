"""State equals the replay of its records, and the replay rules refuse records out of order.

A small driver plays heartbeats the way ``GroupMetadataManager.consumerGroupHeartbeat`` sequences its records
(join, heartbeat with owned partitions, subscription change, leave, static temporary leave and rejoin under a new
member id, regex resolution), computing every step with ``compute_target_assignment`` and ``reconcile`` against the
state *before* the batch and then appending and replaying the batch -- the runtime's shape. Hypothesis picks the
steps. Properties, after every batch:

* the live group equals a fresh replay of the whole log, and a replay of the log's JSON form (a failover load);
* no partition is owned (assigned or pending revocation) by two members at once -- KIP-848's safety rule, which
  the reconciliation guarantees and the partition epochs enforce;
* the current partition epochs are exactly the owners' epochs.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator import records as R
from coordinator.consumer_group import (EMPTY_ASSIGNMENT, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup,
                                        ConsumerGroupMember, ConsumerGroupState, SubscriptionType,
                                        current_assignment_record, member_metadata_record, member_removal_records,
                                        replay_all, target_assignment_record)
from coordinator.reconciliation import reconcile, subscribed_topic_ids
from coordinator.target_assignment import compute_target_assignment

from cg_helpers import member, tid

TOPICS = {tid(n): {"name": n, "partitions": p} for n, p in (("t0", 3), ("t1", 4), ("t2", 2))}
IDS = {meta["name"]: t for t, meta in TOPICS.items()}
REGEX = "t.*"


def round_robin(members, topics, *, subscription_type):
    """A deterministic stand-in for Kafka's assignors: each topic's partitions dealt over its subscribers."""
    out = {m: {} for m in members}
    for t in sorted(topics):
        subs = sorted(m for m, spec in members.items() if t in spec["subscribed_topic_ids"])
        for p in range(topics[t]["partitions"]):
            if subs:
                out[subs[p % len(subs)]].setdefault(t, []).append(p)
    return out


class Driver:
    def __init__(self, draw) -> None:
        self.draw = draw
        self.group = ConsumerGroup("g")
        self.log: list[R.Record] = []
        self.now = 0
        self.next_id = 0
        self.revoke_all = False  # clients revoke every pending partition at once

    def write(self, batch: list[R.Record]) -> None:
        for rec in batch:  # the runtime: the handler's records are appended, then replayed
            self.log.append(rec)
            self.group.replay(rec)

    def target(self, batch: list[R.Record], updated: ConsumerGroupMember, bump: bool):
        """Group epoch bump (if the subscription changed), then the target assignment if it is stale (assignment
        interval 0); else the member's last target. Computed on the state before the batch."""
        g = self.group
        epoch = g.group_epoch + 1 if bump else g.group_epoch
        if bump:
            batch.append(R.ConsumerGroupMetadata("g", epoch=epoch, metadata_hash=0))
        if g.assignment_epoch >= epoch:
            return g.assignment_epoch, g.target_assignment_of(updated.member_id, updated.instance_id)
        result = compute_target_assignment(g, epoch, updated, subscription_type=SubscriptionType.HETEROGENEOUS,
                                           topics=TOPICS, assignor=round_robin, now_ms=self.now)
        batch.extend(result.records)
        return epoch, result.target_assignment.get(updated.member_id, EMPTY_ASSIGNMENT)

    def reconcile(self, batch, updated: ConsumerGroupMember, owned, target, changed=False) -> None:
        epoch, assignment = target
        new = reconcile(updated, target_epoch=epoch, target=assignment,
                        current_partition_epoch=self.group.current_partition_epoch, owned_topic_partitions=owned,
                        subscribed_topic_ids=subscribed_topic_ids(updated, self.group.resolved_regular_expressions,
                                                                  IDS),
                        has_subscription_changed=changed)
        if new != updated:  # GroupMetadataManager.maybeReconcile
            batch.append(current_assignment_record("g", new))

    def owned(self, m: ConsumerGroupMember):
        """What the client reports: its partitions minus the pending ones it has revoked (sometimes nothing)."""
        if not self.revoke_all and self.draw(st.integers(0, 9)) == 0:
            return None
        out = []
        for t in sorted(set(m.assigned_partitions) | set(m.partitions_pending_revocation)):
            pending = m.partitions_pending_revocation.get(t, {})
            ps = sorted(p for p in set(m.assigned_partitions.get(t, {})) | set(pending)
                        if not (p in pending and (self.revoke_all or self.draw(st.booleans()))))
            if ps:
                out.append((t, ps))
        return out

    # --- the steps a heartbeat (or a timer) takes -------------------------------------------------------------

    def join(self) -> None:
        self.next_id += 1
        mid = f"m{self.next_id}"
        static = self.draw(st.booleans())
        if self.draw(st.integers(0, 4)) == 0:
            names, regex = [], REGEX
        else:
            names, regex = self.draw(st.lists(st.sampled_from(sorted(IDS) + ["missing"]), max_size=3)), ""
        updated = member(mid, instance_id=f"i{self.next_id}" if static else None, subscribed_topic_names=names,
                         subscribed_topic_regex=regex, rebalance_timeout_ms=30000, client_id="c",
                         server_assignor_name=self.draw(st.sampled_from([None, "uniform", "range"])))
        batch: list[R.Record] = [member_metadata_record("g", updated)]
        self.reconcile(batch, updated, [], self.target(batch, updated, bump=True))
        self.write(batch)
        if regex and regex not in self.group.resolved_regular_expressions:  # the async resolution lands
            self.write([R.ConsumerGroupRegularExpression("g", regular_expression=regex, topics=("t0", "t1", "t2"),
                                                         version=1, timestamp_ms=self.now),
                        R.ConsumerGroupMetadata("g", epoch=self.group.group_epoch + 1, metadata_hash=0)])

    def heartbeat(self, m: ConsumerGroupMember) -> None:
        batch: list[R.Record] = []
        self.reconcile(batch, m, self.owned(m), self.target(batch, m, bump=False))
        self.write(batch)

    def change_subscription(self, m: ConsumerGroupMember) -> None:
        updated = m.replace(subscribed_topic_names=frozenset(self.draw(st.lists(st.sampled_from(sorted(IDS)),
                                                                               max_size=3))))
        batch: list[R.Record] = [member_metadata_record("g", updated)]
        self.reconcile(batch, updated, self.owned(m), self.target(batch, updated, bump=True), changed=True)
        self.write(batch)

    def leave(self, m: ConsumerGroupMember) -> None:
        g = self.group
        batch: list[R.Record] = member_removal_records("g", m.member_id)
        if m.subscribed_topic_regex and g.num_subscribed_members(m.subscribed_topic_regex) == 1:
            batch.append(R.ConsumerGroupRegularExpressionTombstone("g", regular_expression=m.subscribed_topic_regex))
        epoch = g.group_epoch + 1
        batch.append(R.ConsumerGroupMetadata("g", epoch=epoch, metadata_hash=0))
        if len(g.members) == 1:  # KAFKA-20442: an emptied group is not left Assigning
            batch.append(R.ConsumerGroupTargetAssignmentMetadata("g", assignment_epoch=epoch,
                                                                 assignment_timestamp_ms=0))
        self.write(batch)

    def static_leave(self, m: ConsumerGroupMember) -> None:
        """Epoch -2: the member keeps its assigned partitions (epochs reset to 0), drops what it was revoking."""
        away = m.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                         partitions_pending_revocation={}).reset_assigned_partitions_epochs_to_zero()
        self.write([current_assignment_record("g", away)])

    def static_rejoin(self, old: ConsumerGroupMember) -> None:
        """The instance comes back under a new member id and takes the old member's place
        (GroupMetadataManager.replaceMember), then heartbeats."""
        self.next_id += 1
        new = old.with_new_member_id(f"m{self.next_id}").replace(member_epoch=0, previous_member_epoch=0)
        self.write(member_removal_records("g", old.member_id) + [
            member_metadata_record("g", new),
            target_assignment_record("g", new.member_id, self.group.target_assignment_of(old.member_id)),
            current_assignment_record("g", new)])
        self.heartbeat(self.group.members[new.member_id])

    def step(self) -> None:
        self.now += self.draw(st.integers(0, 2000))
        members = list(self.group.members.values())
        kind = self.draw(st.sampled_from(["join", "heartbeat", "heartbeat", "heartbeat", "subscribe", "leave",
                                          "static"])) if members else "join"
        if kind == "join":
            return self.join()
        m = self.draw(st.sampled_from(members))
        if m.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            return self.leave(m) if kind == "leave" else self.static_rejoin(m)
        if kind == "subscribe" and not m.subscribed_topic_regex:
            return self.change_subscription(m)
        if kind == "static" and m.instance_id is not None:
            return self.static_leave(m)
        if kind == "leave":
            return self.leave(m)
        return self.heartbeat(m)


def check_replay(driver: Driver) -> None:
    """State equals the replay of its records: from scratch, and from the JSON log a new leader would load."""
    g = driver.group
    assert replay_all(driver.log).get("g").snapshot() == g.snapshot()
    entries = [R.LogEntry(0, i, 0, r).to_dict() for i, r in enumerate(driver.log)]
    loaded = replay_all(R.LogEntry.from_dict(json.loads(json.dumps(e))).record for e in entries)
    assert loaded.get("g").snapshot() == g.snapshot()


def check(driver: Driver) -> None:
    """No partition has two owners; the partition epochs are the owners' epochs; the state is Kafka's rule."""
    g = driver.group
    owners: dict[tuple[str, int], int] = {}
    for m in g.members.values():
        for source in (m.assigned_partitions, m.partitions_pending_revocation):
            for t, ps in source.items():
                for p in ps:
                    assert (t, p) not in owners, f"{t}-{p} owned twice"
                    owners[(t, p)] = m.member_epoch
    assert {(t, p): e for t, ps in g.current_partition_epochs.items() for p, e in ps.items()} == owners
    # The derived state (kept incrementally) is ConsumerGroup.maybeUpdateGroupState's walk over the members.
    expected = (ConsumerGroupState.EMPTY if not g.members
                else ConsumerGroupState.ASSIGNING if g.group_epoch > g.assignment_epoch
                else ConsumerGroupState.RECONCILING if any(not m.is_reconciled_to(g.assignment_epoch)
                                                           for m in g.members.values())
                else ConsumerGroupState.STABLE)
    assert g.state == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_state_equals_replay_of_its_records(data):
    driver = Driver(data.draw)
    for _ in range(data.draw(st.integers(1, 40))):
        driver.step()
        check(driver)
        if data.draw(st.integers(0, 3)) == 0:  # a failover at this point (often mid-reconciliation)
            check_replay(driver)
    check_replay(driver)
    # Then static members come back, and everyone heartbeats revoking what it must: the group gets Stable.
    driver.revoke_all = True
    for m in list(driver.group.members.values()):
        if m.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            driver.static_rejoin(m)
    for _ in range(3):
        for mid in list(driver.group.members):
            driver.heartbeat(driver.group.members[mid])
            check(driver)
    check_replay(driver)
    g = driver.group
    assert g.state == (ConsumerGroupState.EMPTY if not g.members else ConsumerGroupState.STABLE), g
    for mid, m in g.members.items():  # reconciled: each member owns exactly its target
        assert {t: set(ps) for t, ps in m.assigned_partitions.items()} == g.target_assignment_of(mid).as_sets()
