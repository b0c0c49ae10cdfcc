"""A tiny KIP-848 log written by hand with the coordinator's own record classes, in the order Kafka's
``GroupMetadataManager`` writes them (a member's metadata, the group epoch, the target assignment members then its
metadata, the members' current assignments as they heartbeat), and the values every metric must take on it,
worked out by hand in test_analysis_consumer_groups.py.

Run ``D`` (scenario ``cg``), topic ``w`` (4 partitions) and ``z`` (2):

* group ``cg`` (consumer protocol, server assignor uniform): a joins alone (epoch 1) and gets w0-w3; b joins at
  1000 (epoch 2): a must revoke w2,w3 (it acknowledges at 1700), b gets them at 2000; b leaves at 3000 (epoch 3),
  c joins at 3200 (epoch 4) before the target of epoch 3 was computed; target epoch 4 at 3400 gives c w2,w3 (free:
  b is gone) at once; a reaches epoch 4 at 3600.
* group ``mig``: a classic group (range) of one member m owning z0,z1, upgraded to a consumer group at 2000 (the
  classic group's tombstone, then its member's ConsumerGroup* records at epoch 1 = its generation), then consumer
  n joins at 2500 (epoch 2, server assignor range): m gives up z1 at 2700, n gets it at 2800.

The run ends at 5000 (an offset commit).
"""

from __future__ import annotations

from pathlib import Path

from coordinator import records as R
from hand_logs import Log, completed, joined, member, started, stable, sync
from protocol.uuids import uuid_to_string
from coordinator.cluster import topic_id

W = uuid_to_string(topic_id("w"))
Z = uuid_to_string(topic_id("z"))


def meta(g: str, mid: str, topic: str, assignor: str | None = "uniform") -> R.ConsumerGroupMemberMetadata:
    return R.ConsumerGroupMemberMetadata(group_id=g, member_id=mid, client_id="c" + mid, client_host="/10.0.0.1",
                                         subscribed_topic_names=(topic,), rebalance_timeout_ms=30000,
                                         server_assignor=assignor)


def epoch(g: str, e: int) -> R.ConsumerGroupMetadata:
    return R.ConsumerGroupMetadata(group_id=g, epoch=e, metadata_hash=7)


def target(g: str, mid: str, tid: str, parts: list[int]) -> R.ConsumerGroupTargetAssignmentMember:
    return R.ConsumerGroupTargetAssignmentMember(group_id=g, member_id=mid,
                                                 topic_partitions=(R.TopicPartitions(tid, tuple(parts)),))


def target_meta(g: str, e: int, ts: int) -> R.ConsumerGroupTargetAssignmentMetadata:
    return R.ConsumerGroupTargetAssignmentMetadata(group_id=g, assignment_epoch=e, assignment_timestamp_ms=ts)


def current(g: str, mid: str, e: int, prev: int, state: int, tid: str, assigned: list[int],
            pending: list[int] = ()) -> R.ConsumerGroupCurrentMemberAssignment:
    """state: Kafka's MemberState byte -- 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS."""
    tp = (lambda ps: (R.TopicPartitionEpochs(tid, tuple(ps), tuple(e for _ in ps)),) if ps else ())
    return R.ConsumerGroupCurrentMemberAssignment(group_id=g, member_id=mid, member_epoch=e,
                                                  previous_member_epoch=prev, state=state,
                                                  assigned_partitions=tp(assigned),
                                                  partitions_pending_revocation=tp(pending))


def left(L: Log, ts: int, g: str, mid: str, lp: int = 0) -> None:
    """A member leaves: Kafka deletes its current assignment, target and metadata (in that order)."""
    L.add(ts, R.ConsumerGroupCurrentMemberAssignmentTombstone(group_id=g, member_id=mid), lp)
    L.add(ts, R.ConsumerGroupTargetAssignmentMemberTombstone(group_id=g, member_id=mid), lp)
    L.add(ts, R.ConsumerGroupMemberMetadataTombstone(group_id=g, member_id=mid), lp)


def run_d() -> Log:
    L = Log()
    g = "cg"
    L.add(0, meta(g, "a", "w"))
    L.add(0, epoch(g, 1))
    L.add(0, target(g, "a", W, [0, 1, 2, 3]))
    L.add(0, target_meta(g, 1, 0))
    L.add(0, current(g, "a", 1, 0, 0, W, [0, 1, 2, 3]))                     # Stable at 0: a owns w0-w3
    L.add(1000, meta(g, "b", "w"))
    L.add(1000, epoch(g, 2))                                                 # b joined
    L.add(1000, target(g, "a", W, [0, 1]))
    L.add(1000, target(g, "b", W, [2, 3]))
    L.add(1000, target_meta(g, 2, 1000))
    L.add(1000, current(g, "b", 2, 0, 2, W, []))                             # b waits for w2,w3 (unreleased)
    L.add(1500, current(g, "a", 1, 1, 1, W, [0, 1], [2, 3]))                 # a is told to revoke w2,w3
    L.add(1700, current(g, "a", 2, 1, 0, W, [0, 1]))                         # a acknowledged: w2,w3 free
    L.add(2000, current(g, "b", 2, 2, 0, W, [2, 3]))                         # Stable at 2000
    left(L, 3000, g, "b")
    L.add(3000, epoch(g, 3))                                                 # b left: w2,w3 unowned
    L.add(3200, meta(g, "c", "w"))
    L.add(3200, epoch(g, 4))                                                 # c joined before target 3
    L.add(3400, target(g, "a", W, [0, 1]))
    L.add(3400, target(g, "c", W, [2, 3]))
    L.add(3400, target_meta(g, 4, 3400))
    L.add(3400, current(g, "c", 4, 0, 0, W, [2, 3]))                         # free partitions: c owns them at once
    L.add(3600, current(g, "a", 4, 2, 0, W, [0, 1]))                         # Stable at 3600
    # --- group "mig": classic, then upgraded to a consumer group (log partition 1) ------------------------------
    m = "mig"
    L.add(0, joined(m, "m"), 1)
    L.add(0, started(m, 0, "Adding new member m with group instance id None; client reason: x", True), 1)
    L.add(50, completed(m, 1, ["m"], "range"), 1)
    L.add(100, stable(m, 1, "range", [member("m", {"z": [0, 1]})]), 1)
    L.add(120, sync(m, "m", 1), 1)                                           # m owns z0,z1 from 120
    L.add(2000, R.GroupTombstone(group_id=m, reason="upgraded the classic group to a consumer group"), 1)
    L.add(2000, meta(m, "m", "z", None), 1)
    L.add(2000, epoch(m, 1), 1)
    L.add(2000, target(m, "m", Z, [0, 1]), 1)
    L.add(2000, target_meta(m, 1, 0), 1)
    L.add(2000, current(m, "m", 1, 0, 0, Z, [0, 1]), 1)                      # Stable at 2000, nothing moved
    L.add(2500, meta(m, "n", "z", "range"), 1)
    L.add(2500, epoch(m, 2), 1)
    L.add(2500, target(m, "m", Z, [0]), 1)
    L.add(2500, target(m, "n", Z, [1]), 1)
    L.add(2500, target_meta(m, 2, 2500), 1)
    L.add(2500, current(m, "n", 2, 0, 2, Z, []), 1)
    L.add(2600, current(m, "m", 1, 1, 1, Z, [0], [1]), 1)
    L.add(2700, current(m, "m", 2, 1, 0, Z, [0]), 1)                          # z1 free from 2700
    L.add(2800, current(m, "n", 2, 2, 0, Z, [1]), 1)                          # Stable at 2800
    L.add(5000, R.OffsetCommit(group_id=g, topic="w", partition=0, offset=9, commit_timestamp_ms=5000))
    return L


def write_d(root: Path) -> Path:
    return run_d().write(root / "D", "cg", 1)
