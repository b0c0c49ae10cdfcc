"""The consumer-protocol invariants (scenarios/invariants.py) on the real coordinator, and each one catching a
deliberately broken rule injected into it.

The flow is Kafka's ``GroupMetadataManagerTest.testReconciliationProcess`` in small: member a owns foo-0..3; b joins
and the target moves foo-2, foo-3 to b. Kafka's rules: a keeps its epoch and must revoke them (UNREVOKED_PARTITIONS);
b moves to the new epoch without them (UNRELEASED_PARTITIONS); a acknowledges (its heartbeat no longer lists them)
and reaches the new epoch; then b gets them. The harness is the coordinator tests' ``CgEnv`` (the service with
Kafka's ``MockPartitionAssignor``) with every request, answer and record also fed to a :class:`Checker`, as the
simulator's brokers do.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatRequest, OffsetCommitRequest

from coordinator import consumer_group as CG
from coordinator import reconciliation
from coordinator.consumer_group import ConsumerGroupMember

from scenarios.brokers import _topic_id
from scenarios.invariants import CONSUMER_INVARIANTS, Checker, consumer_group_settle_problems
from scenarios.model import INVARIANTS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "coordinator" / "consumer_group"))
from cg_env import CgEnv  # noqa: E402

G = "g"
FOO = CgEnv.tid("foo")


class Watched(CgEnv):
    """``CgEnv`` whose requests, answers and records also go to an invariant checker."""

    def __init__(self, commit_rule: str = "assignment-epoch") -> None:
        super().__init__(topics={"foo": 4}, **{"group.consumer.assignment.interval.ms": 0})
        self.checker = Checker(INVARIANTS, 0, lambda: [], commit_rule=commit_rule)

    def _feed(self, out, rid=None, answer=None) -> None:
        for e in out.records:
            self.checker.on_record(e)
        if out.records:
            self.checker.end_operation(self.now)
        if rid is not None and answer is not None:
            self.checker.on_response(rid, answer, self.now, _topic_id)

    def send(self, req, version, client_id="client"):
        self._rid += 1
        api = {ConsumerGroupHeartbeatRequest: 68, OffsetCommitRequest: 8}.get(type(req))
        if api is not None:
            self.checker.on_request(self._rid, api, req)
        out = self.svc.handle(self.svc.coordinator_of("any"), req, self._ctx(version, client_id), self.now)
        self._check(out)
        self._feed(out, self._rid, out.answer)
        return out.answer

    def _ctx(self, version, client_id):
        from coordinator import RequestContext
        return RequestContext(self._rid, version, client_id=client_id, client_host="/127.0.0.1")

    def advance(self, ms):
        self.now += ms
        out = self.svc.poll(self.now)
        self._check(out)
        self._feed(out)
        return self.last_records

    def hb(self, member, epoch, owned=None, **kw):
        if epoch == 0:
            kw.setdefault("names", ["foo"])
            kw.setdefault("rebalance_timeout_ms", 5000)
            return self.heartbeat(G, member, 0, owned={}, **kw)
        return self.heartbeat(G, member, epoch, owned=None if owned is None else {FOO: owned}, **kw)

    def violations(self, name=None):
        return [v for v in self.checker.violations if name is None or v.invariant == name]


def prepare(env: Watched, **target) -> None:
    env.assignor.prepare({m: {FOO: ps} for m, ps in target.items()})


def flow(env: Watched) -> dict:
    """The reconciliation flow of the module docstring; returns the epochs seen."""
    prepare(env, a=[0, 1, 2, 3])
    r = env.hb("a", 0)
    e1 = r.member_epoch
    env.hb("a", e1, owned=[0, 1, 2, 3])               # a acknowledges its assignment
    prepare(env, a=[0, 1], b=[2, 3])
    rb = env.hb("b", 0)                                # b joins: new target; b waits for foo-2, foo-3
    ra = env.hb("a", e1, owned=[0, 1, 2, 3])           # a learns it must revoke them
    env.hb("a", ra.member_epoch, owned=[0, 1])         # a acknowledges the revocation
    rb2 = env.hb("b", rb.member_epoch, owned=[])       # b gets them
    return {"e1": e1, "b_join": rb, "a_revoke": ra, "b_final": rb2}


def test_the_correct_coordinator_keeps_every_invariant():
    env = Watched()
    seen = flow(env)
    assert seen["a_revoke"].member_epoch == seen["e1"]            # a kept its epoch while revoking (Kafka)
    assert sorted(seen["b_final"].assignment.topic_partitions[0].partitions) == [2, 3]
    assert env.violations() == []
    for name in CONSUMER_INVARIANTS:
        if name not in ("commits-by-epoch", "target-up-to-date"):  # (checked by commits, at settle time)
            assert env.checker.checked[name] > 0, name
    # converged: the group is Stable and each member holds its target by its callbacks
    g = env.svc.consumer_group(G)
    assert consumer_group_settle_problems(g, {"a": {("foo", 0), ("foo", 1)}, "b": {("foo", 2), ("foo", 3)}},
                                          {"foo": FOO}) == []


def test_revocation_acknowledged_catches_a_coordinator_that_does_not_wait_for_the_ack(monkeypatch):
    # broken rule: the member is taken not to own its revoked partitions any more (no UNREVOKED_PARTITIONS step)
    monkeypatch.setattr(reconciliation._Step, "owns_revoked", lambda self, pending: False)
    env = Watched()
    prepare(env, a=[0, 1, 2, 3])
    e1 = env.hb("a", 0).member_epoch
    env.hb("a", e1, owned=[0, 1, 2, 3])
    prepare(env, a=[0, 1], b=[2, 3])
    rb = env.hb("b", 0)
    env.hb("a", e1, owned=[0, 1, 2, 3])     # a is still processing foo-2, foo-3 ...
    env.hb("b", rb.member_epoch, owned=[])  # ... and b gets them
    found = env.violations("revocation-acknowledged")
    assert found and "before a acknowledged its revocation" in found[0].message


def test_one_owner_at_a_time_catches_assign_before_revoke(monkeypatch):
    # broken rule: every partition looks free (Kafka's current partition epoch ignored): b is given foo-2, foo-3
    # while a still holds them
    monkeypatch.setattr(CG.ConsumerGroup, "current_partition_epoch", lambda self, t, p: -1)
    env = Watched()
    prepare(env, a=[0, 1, 2, 3])
    e1 = env.hb("a", 0).member_epoch
    env.hb("a", e1, owned=[0, 1, 2, 3])
    prepare(env, a=[0, 1], b=[2, 3])
    env.hb("b", 0)
    found = env.violations("one-owner-at-a-time")
    assert found and "while a still holds it" in found[0].message


def test_member_epochs_increase_catches_an_epoch_going_back(monkeypatch):
    real = ConsumerGroupMember.update_member_epoch

    def broken(self, epoch):  # broken rule: a member that must revoke goes back one epoch
        return real(self, epoch - 1 if epoch == self.member_epoch and epoch > 1 else epoch)
    monkeypatch.setattr(ConsumerGroupMember, "update_member_epoch", broken)
    env = Watched()
    prepare(env, a=[0, 1, 2, 3])
    e1 = env.hb("a", 0).member_epoch
    env.hb("a", e1, owned=[0, 1, 2, 3])
    prepare(env, a=[0, 1], b=[2, 3])
    env.hb("b", 0)
    env.hb("a", e1, owned=[0, 1, 2, 3])
    found = env.violations("member-epochs-increase")
    assert found and f"from {e1} to {e1 - 1}" in found[0].message


def test_epochs_bounded_catches_a_member_ahead_of_the_target(monkeypatch):
    real = ConsumerGroupMember.update_member_epoch

    def broken(self, epoch):  # broken rule: a member moving to a new epoch overshoots it
        return real(self, epoch + 1 if epoch > self.member_epoch else epoch)
    monkeypatch.setattr(ConsumerGroupMember, "update_member_epoch", broken)
    env = Watched()
    prepare(env, a=[0, 1, 2, 3])
    env.hb("a", 0)
    found = env.violations("epochs-bounded")
    assert found and "above the target assignment epoch" in found[0].message


def test_commits_by_epoch_catches_a_coordinator_that_accepts_stale_epochs(monkeypatch):
    env = Watched()
    seen = flow(env)
    b_epoch = seen["b_final"].member_epoch
    # Kafka: b's foo-2 was assigned at b_epoch, so a commit at an older epoch is STALE_MEMBER_EPOCH
    assert env.commit(G, "b", b_epoch - 1, {("foo", 2): 5}) == {("foo", 2): ErrorCode.STALE_MEMBER_EPOCH}
    assert env.commit(G, "b", b_epoch, {("foo", 2): 5}) == {("foo", 2): ErrorCode.NONE}
    assert env.violations() == [] and env.checker.checked["commits-by-epoch"] == 2
    # broken rule: every commit accepted
    monkeypatch.setattr(CG.ConsumerGroup, "validate_offset_commit", lambda self, *a, **k: CG.NO_OP_VALIDATION)
    assert env.commit(G, "b", b_epoch - 1, {("foo", 2): 6}) == {("foo", 2): ErrorCode.NONE}
    found = env.violations("commits-by-epoch")
    assert found and f"was assigned at epoch {b_epoch}" in found[0].message


@pytest.mark.parametrize("rule,caught", [("assignment-epoch", False), ("member-epoch", True)])
def test_commit_rule_option_kip_1251(rule, caught):
    """Kafka 4.4 (KIP-1251) accepts a commit at an older member epoch for a partition assigned at or before it;
    ``commit_rule = "member-epoch"`` holds the coordinator to the 4.0-4.2 rule, so the same commit is reported."""
    env = Watched(commit_rule=rule)
    seen = flow(env)
    # a kept foo-0 from its first epoch e1 and is now at a later epoch: a commit at e1 is accepted by Kafka 4.4
    a_epoch = env.svc.consumer_group(G).members["a"].member_epoch
    assert a_epoch > seen["e1"]
    assert env.commit(G, "a", seen["e1"], {("foo", 0): 3}) == {("foo", 0): ErrorCode.NONE}
    assert bool(env.violations("commits-by-epoch")) is caught


def test_convergence_catches_a_member_stuck_in_revocation(monkeypatch):
    # broken rule: a member is always taken to still own its revoked partitions -> it never leaves
    # UNREVOKED_PARTITIONS, the group never reaches Stable
    monkeypatch.setattr(reconciliation._Step, "owns_revoked", lambda self, pending: True)
    env = Watched()
    flow(env)
    problems = consumer_group_settle_problems(env.svc.consumer_group(G), {"a": {("foo", 0), ("foo", 1)},
                                                                          "b": set()}, {"foo": FOO})
    assert any("group state is Reconciling" in p for p in problems), problems


def test_one_owner_by_callbacks_catches_assign_before_revoke():
    """By the members' own callbacks: a driver that runs b's onPartitionsAssigned before a's
    onPartitionsRevoked is caught; in Kafka's order (revoke, then assign) nothing is reported; a holder that could
    no longer commit the partition (fenced: the coordinator would refuse its commits) does not count."""
    def owns(who):
        return lambda name, mid, tp: name in who
    c = Checker(INVARIANTS, 0, lambda: [])
    c.on_cg_assigned(1, G, "a", "a-id", [("foo", 2)], owns({"a", "b"}))
    c.on_cg_released(G, "a", [("foo", 2)])
    c.on_cg_assigned(2, G, "b", "b-id", [("foo", 2)], owns({"a", "b"}))
    assert c.violations == []
    c.on_cg_assigned(3, G, "a", "a-id", [("foo", 2)], owns({"a", "b"}))  # broken: b never revoked
    assert [v.invariant for v in c.violations] == ["one-owner-at-a-time"]
    c2 = Checker(INVARIANTS, 0, lambda: [])
    c2.on_cg_assigned(1, G, "a", "a-id", [("foo", 2)], owns({"a", "b"}))
    c2.on_cg_assigned(2, G, "b", "b-id", [("foo", 2)], owns({"b"}))  # a was fenced
    assert c2.violations == []


def test_a_holder_owns_what_it_could_commit():
    """``Checker.can_commit``, Kafka 4.4's commit rule on the records: the member's own epoch; an older epoch for a
    partition assigned at or before it (KIP-1251); nothing for a partition no longer assigned, a newer epoch, or a
    member the group no longer has."""
    env = Watched()
    seen = flow(env)
    c = env.checker
    c.topic_names = {FOO: "foo"}
    a_epoch = env.svc.consumer_group(G).members["a"].member_epoch
    assert c.can_commit(G, "a", a_epoch, ("foo", 0))
    assert c.can_commit(G, "a", seen["e1"], ("foo", 0))          # foo-0 assigned to a since e1
    assert not c.can_commit(G, "a", seen["e1"], ("foo", 2))      # revoked from a
    assert not c.can_commit(G, "a", a_epoch + 1, ("foo", 0))
    assert not c.can_commit(G, "nobody", a_epoch, ("foo", 0))
