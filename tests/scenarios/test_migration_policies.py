"""A rolling upgrade classic -> consumer (scenarios/library/classic-to-consumer-migration.toml) and a rolling downgrade
consumer -> classic (consumer-to-classic-migration.toml), each run under every ``group.consumer.migration.policy``
(``ConsumerGroupMigrationPolicy``: bidirectional, upgrade, downgrade, disabled), with the outcome Kafka 4.4's
``GroupMetadataManager`` gives. The expected outcomes come from Kafka's rules and its ``GroupMetadataManagerTest``:

* upgrade allowed (bidirectional, upgrade): the first consumer-protocol heartbeat (epoch 0) converts the non-empty
  classic group -- ``testConsumerGroupHeartbeatWithStableClassicGroup`` (policy UPGRADE): the classic group's
  tombstone, then consumer-group records whose epoch is the classic generation.
* upgrade refused (downgrade, disabled): ``validateOnlineUpgrade`` answers GROUP_ID_NOT_FOUND "Cannot upgrade classic
  group G to consumer group because online upgrade is disabled." (``testConsumerGroupHeartbeatWithNonEmptyClassicGroup``:
  a non-empty classic group refuses the heartbeat), fatal to the client (AbstractHeartbeatRequestManager); an
  *empty* classic group is converted whatever the policy (``testConsumerGroupHeartbeatWithEmptyClassicGroup``).
* classic members join a consumer group unless the policy is disabled
  (``testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy``: INCONSISTENT_GROUP_PROTOCOL, fatal to the
  classic client); a classic JoinGroup to an *empty* consumer group converts it whatever the policy
  (``testClassicGroupJoinWithEmptyConsumerGroup``).
* downgrade allowed (bidirectional, downgrade): when the last consumer-protocol member leaves, the consumer group is
  tombstoned and replaced by a classic group of the remaining members, which rebalances
  (``testLastConsumerProtocolMemberLeavingConsumerGroup``, policy DOWNGRADE; the reason "Downgrade group G from
  consumer to classic for member leaving."); with upgrade only the group stays a consumer group of classic members
  (``validateOnlineDowngradeWithFencedMembers``: ``isDowngradeEnabled`` false).

Every run also holds the migration invariants: nothing consumed is lost (``at-least-once``, every record processed)
or owned twice (``one-owner-at-a-time``, which counts the classic members of a mixed group, and
``exclusive-ownership`` for the classic phases); the committed offsets survive each conversion (Kafka keeps offsets
apart from the group's metadata), so graceful restarts process nothing twice. A client that does not revoke before
its partitions move is caught under every policy.
"""

from __future__ import annotations

import pytest

from consumer import outputs as O
from consumer.listener import RebalanceListenerInvoker
from coordinator import records as R
from scenarios.model import load_scenario, parse_scenario
from scenarios.runner import LIBRARY_DIR, run_scenario

POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
UPGRADE = "classic-to-consumer-migration"
DOWNGRADE = "consumer-to-classic-migration"
G = "payments"
REFUSED_UPGRADE = f"Cannot upgrade classic group {G} to consumer group because online upgrade is disabled."
_RUNS: dict = {}


def under(name: str, policy: str):
    if (name, policy) not in _RUNS:
        data = load_scenario(LIBRARY_DIR / f"{name}.toml").model_dump(mode="json", exclude_none=True)
        data["cluster"]["broker"]["group.consumer.migration.policy"] = policy
        _RUNS[name, policy] = run_scenario(parse_scenario(data, name), 1, trace=True)
    return _RUNS[name, policy]


def records(res, *types) -> list:
    return [e for e in res.sim.records if e.record.group_id == G and isinstance(e.record, types)]


def errors(res) -> dict[str, str]:
    return {e["consumer"]: e["error"] for e in res.summary["consumer_errors"]}


def assert_nothing_lost_or_double_owned(res) -> None:
    assert res.ok, "\n".join(map(str, res.violations))
    inv = res.summary["invariants"]
    for name in ("at-least-once", "one-owner-at-a-time", "exclusive-ownership", "settles", "offsets-monotonic"):
        assert inv[name]["checked"] > 0 and inv[name]["violations"] == 0, name
    group = res.summary["groups"][G]
    assert group["unprocessed"] == 0 and group["duplicates"] == 0
    owners: dict = {}
    for c in res.sim.consumers:
        if c.alive:
            for tp in c.owned:
                owners.setdefault(tp, []).append(c.name)
    assert sorted(owners) == [(G, p) for p in range(12)] and all(len(v) == 1 for v in owners.values())


# --- classic -> consumer ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["bidirectional", "upgrade"])
def test_rolling_upgrade_when_the_policy_allows_it(policy):
    """The first consumer-protocol heartbeat (payments-0 back at 23 s) converts the four-member classic group; every
    member then migrates inside the consumer group; nobody is refused."""
    res = under(UPGRADE, policy)
    assert_nothing_lost_or_double_owned(res)
    tomb = records(res, R.GroupTombstone)
    first = records(res, R.ConsumerGroupMetadata)
    assert [e.timestamp_ms for e in tomb] == [23_003] and first[0].timestamp_ms == 23_003
    assert first[0].record.epoch == max(e.record.generation_id for e in records(res, R.GroupMetadata))
    g = res.sim.svc.consumer_group(G)
    assert len(g.members) == 4 and not any(m.use_classic_protocol for m in g.members.values())
    assert not errors(res)


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_rolling_upgrade_refused_by_the_policy(policy):
    """Each consumer that comes back with group.protocol=consumer while classic members remain is answered
    GROUP_ID_NOT_FOUND and fails (payments-0..2); the classic group rebalances without it each time. payments-3, the
    last, comes back to an empty classic group, which is converted whatever the policy: it ends alone, owning all."""
    res = under(UPGRADE, policy)
    assert_nothing_lost_or_double_owned(res)
    refused = errors(res)
    assert sorted(refused) == ["payments-0", "payments-1", "payments-2"]
    assert all(msg.endswith(REFUSED_UPGRADE) for msg in refused.values())
    tomb = records(res, R.GroupTombstone)
    assert [e.timestamp_ms for e in tomb] == [53_003]  # payments-3 back (stopped at 50 s, down 3 s)
    last = [e for e in records(res, R.GroupMetadata) if e.timestamp_ms < tomb[0].timestamp_ms][-1]
    assert last.record.members == ()  # the classic group was empty when it was converted
    g = res.sim.svc.consumer_group(G)
    assert len(g.members) == 1 and res.sim.svc.group(G) is None


# --- consumer -> classic ------------------------------------------------------------------------------------------

def _classic_members_joined(res) -> list:
    return [e for e in records(res, R.ConsumerGroupMemberMetadata) if e.record.classic_member_metadata is not None]


@pytest.mark.parametrize("policy", ["bidirectional", "downgrade"])
def test_rolling_downgrade_when_the_policy_allows_it(policy):
    """The classic consumers join the consumer group as classic members; when payments-3, the last consumer-protocol
    member, leaves at 50 s the consumer group is tombstoned and a classic group of the three classic members, at the
    group epoch as generation, rebalances; payments-3 comes back into it."""
    res = under(DOWNGRADE, policy)
    assert_nothing_lost_or_double_owned(res)
    assert {e.record.client_id for e in _classic_members_joined(res)} == {"payments-0", "payments-1", "payments-2"}
    gone = records(res, R.ConsumerGroupMetadataTombstone)
    assert [e.timestamp_ms for e in gone] == [50_003]
    converted = [e for e in records(res, R.GroupMetadata) if e.timestamp_ms == 50_003]
    epoch = [e.record.epoch for e in records(res, R.ConsumerGroupMetadata)][-1]
    assert len(converted) == 1 and converted[0].record.generation_id == epoch
    assert len(converted[0].record.members) == 3
    started = [e.record.reason for e in records(res, R.RebalanceStarted) if e.timestamp_ms == 50_003]
    assert started == [f"Downgrade group {G} from consumer to classic for member leaving."]
    g = res.sim.svc.group(G)
    assert res.sim.svc.consumer_group(G) is None and str(g.state.value) == "Stable" and len(g.members) == 4
    assert not errors(res)


def test_rolling_downgrade_under_upgrade_only_keeps_a_consumer_group_of_classic_members():
    res = under(DOWNGRADE, "upgrade")
    assert_nothing_lost_or_double_owned(res)
    assert not records(res, R.ConsumerGroupMetadataTombstone) and not records(res, R.GroupMetadata)
    g = res.sim.svc.consumer_group(G)
    assert len(g.members) == 4 and all(m.use_classic_protocol for m in g.members.values())
    assert str(g.state) == "Stable" and not errors(res)


def test_rolling_downgrade_refused_when_migration_is_disabled():
    """Each classic JoinGroup to the non-empty consumer group is INCONSISTENT_GROUP_PROTOCOL (payments-0..2 fail);
    payments-3's JoinGroup, after the last consumer-protocol member left, finds the consumer group empty and converts
    it (the consumer group's tombstones, then a classic group)."""
    res = under(DOWNGRADE, "disabled")
    assert_nothing_lost_or_double_owned(res)
    refused = errors(res)
    assert sorted(refused) == ["payments-0", "payments-1", "payments-2"]
    assert all("INCONSISTENT_GROUP_PROTOCOL" in msg for msg in refused.values())
    assert not _classic_members_joined(res)
    gone = records(res, R.ConsumerGroupMetadataTombstone)
    assert len(gone) == 1 and gone[0].timestamp_ms >= 53_000
    g = res.sim.svc.group(G)
    assert res.sim.svc.consumer_group(G) is None and len(g.members) == 1


@pytest.mark.parametrize("policy", POLICIES)
def test_policy_runs_are_deterministic(policy):
    for name in (UPGRADE, DOWNGRADE):
        a = under(name, policy)
        data = load_scenario(LIBRARY_DIR / f"{name}.toml").model_dump(mode="json", exclude_none=True)
        data["cluster"]["broker"]["group.consumer.migration.policy"] = policy
        b = run_scenario(parse_scenario(data, name), 1, trace=True)
        assert a.events_lines() == b.events_lines() and a.trace_lines() == b.trace_lines()


@pytest.mark.parametrize("policy", POLICIES)
def test_a_client_that_does_not_revoke_is_caught_across_the_downgrade(monkeypatch, policy):
    """Broken client rule: revocations are acknowledged without onPartitionsRevoked, so a member keeps processing
    partitions that move -- whatever the policy does to the group, one-owner-at-a-time reports it."""
    real = RebalanceListenerInvoker.invoke

    def skip_revoke(self, kind, partitions):
        return None if kind is O.PartitionsRevoked else real(self, kind, partitions)
    monkeypatch.setattr(RebalanceListenerInvoker, "invoke", skip_revoke)
    data = load_scenario(LIBRARY_DIR / f"{DOWNGRADE}.toml").model_dump(mode="json", exclude_none=True)
    data["cluster"]["broker"]["group.consumer.migration.policy"] = policy
    res = run_scenario(parse_scenario(data, DOWNGRADE), 1)
    assert res.summary["invariants"]["one-owner-at-a-time"]["violations"] > 0


# --- a consumer group of classic members that loses one (scenarios/library/bugs/) ---------------------------------

STUCK = LIBRARY_DIR / "bugs" / "classic-members-stuck-assigning.toml"


def test_a_consumer_group_of_classic_members_that_loses_one_is_stuck_assigning_under_upgrade():
    """Found by fuzzing this downgrade under policy upgrade, and Kafka 4.4's rules as they are: payments-0's removal
    (session timeout after its crash) bumps the group epoch; no consumer-protocol heartbeat and no classic JoinGroup
    follow, and a classic Heartbeat asks for a rejoin only below the target assignment epoch (KAFKA-20272), so the
    target is never recomputed: the group stays Assigning, the crashed member's partitions owned by nobody and
    their records never processed. settles and at-least-once report it."""
    res = run_scenario(STUCK, 1, trace=True)
    bad = {k for k, v in res.summary["invariants"].items() if v["violations"]}
    assert bad == {"settles", "at-least-once"}
    g = res.sim.svc.consumer_group(G)
    assert str(g.state) == "Assigning" and g.group_epoch == g.assignment_epoch + 1
    assert len(g.members) == 3 and all(m.use_classic_protocol for m in g.members.values())
    crashed = [e["member_id"] for e in res.sim.trace if e["type"] == "joined" and e["consumer"] == "payments-0"
               and e["t"] < 70_000][-1]  # its classic incarnation
    removed = [e for e in records(res, R.ConsumerGroupMemberMetadataTombstone) if e.record.member_id == crashed]
    assert len(removed) == 1 and 70_000 < removed[0].timestamp_ms <= 80_000  # its session timeout
    last_target = [e for e in records(res, R.ConsumerGroupTargetAssignmentMember)
                   if e.record.member_id == crashed][-1]
    lost = {p for t in last_target.record.topic_partitions for p in t.partitions}
    settle = next(v for v in res.violations if v.invariant == "settles")
    assert sorted(int(s.split("-")[1].split(" ")[0]) for s in settle.message.split("; ") if "owned by nobody" in s) \
        == sorted(lost)


@pytest.mark.parametrize("policy", ["bidirectional", "downgrade"])
def test_the_same_removal_downgrades_the_group_when_the_policy_allows_it(policy):
    """consumerGroupFenceMember -> validateOnlineDowngradeWithFencedMembers: only classic members remain and
    downgrades are enabled, so the group is converted to a classic group, which rebalances the three survivors."""
    data = load_scenario(STUCK).model_dump(mode="json", exclude_none=True)
    data["cluster"]["broker"]["group.consumer.migration.policy"] = policy
    res = run_scenario(parse_scenario(data, STUCK.stem), 1, trace=True)
    assert res.ok, "\n".join(map(str, res.violations))
    g = res.sim.svc.group(G)
    assert res.sim.svc.consumer_group(G) is None and len(g.members) == 3 and str(g.state.value) == "Stable"
