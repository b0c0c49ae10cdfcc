"""Rebalance listener callbacks in Kafka's order (ConsumerCoordinator.onJoinPrepare / onJoinComplete,
ConsumerRebalanceListenerInvoker): EAGER revokes everything before JoinGroup; COOPERATIVE (KIP-429) revokes only
what moved away, after SyncGroup, then rejoins; partitions of a reset generation are lost; a listener's
exception is raised after the step completes. Ported from ConsumerCoordinatorTest (testNormalJoinGroupLeader /
Follower, testRevokeExceptionThrownFirstNonBlocking..., testOutdatedCoordinatorAssignment, the eager/cooperative
parameterised cases)."""

from __future__ import annotations

import pytest

from _coordinator_harness import (COOP, EAGER, T1, T2, Harness, Listener, heartbeat_response, join_group_response,
                                  joined_and_polled, rejoin, subscription_bytes, sync_group_response, tp)
from consumer import outputs as out
from consumer.errors import KafkaException
from protocol.api import ApiKey
from protocol.consumer_protocol import decode_subscription
from protocol.errors import ErrorCode as E


def test_eager_rejoin_revokes_everything_before_join_then_assigns():
    h = joined_and_polled(EAGER)
    h.c.request_rejoin("test")
    h.poll()
    # the JoinGroup is sent after onPartitionsRevoked(all)
    kinds = [type(o).__name__ for o in h.outputs if isinstance(o, (out.PartitionsRevoked, out.SendRequest))]
    assert kinds[:2] == ["PartitionsRevoked", "SendRequest"]
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1)))]
    assert h.c.assignment == ()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 1)]))
    h.poll()
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1))), ("assigned", (tp(T1, 1),))]


def test_eager_revokes_even_an_empty_assignment():
    h = joined_and_polled(EAGER, assigned=())
    h.c.request_rejoin("test")
    h.poll()
    assert h.callbacks() == [("revoked", ())]


def test_cooperative_first_join_and_owned_partitions_in_subscription():
    h = joined_and_polled(COOP, assigned=((T1, 0), (T1, 1)), protocol="cooperative-sticky")
    h.c.request_rejoin("test")
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    # COOPERATIVE onJoinPrepare revokes nothing (still subscribed); owned partitions travel in the subscription
    assert h.callbacks() == []
    _, sub = decode_subscription(join.body.protocols[0].metadata)
    assert sub.owned_partitions == [(T1, [0, 1])] and sub.generation_id == 1
    assert h.c.assignment == (tp(T1, 0), tp(T1, 1))


def test_cooperative_revokes_only_what_moved_then_rejoins():
    h = joined_and_polled(COOP, assigned=((T1, 0), (T1, 1)), protocol="cooperative-sticky")
    h.c.request_rejoin("test")
    rejoin(h, 2, [(T1, 0)], protocol="cooperative-sticky")
    # onJoinComplete: revoked(owned - assigned), then assigned(assigned - owned) = empty
    assert h.callbacks() == [("revoked", (tp(T1, 1),)), ("assigned", ())]
    assert h.c.assignment == (tp(T1, 0),) and h.c.positions == {tp(T1, 0): 10}
    # a follow-up rebalance is requested after revoking
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.body.reason == "need to revoke partitions and re-join"
    _, sub = decode_subscription(join.body.protocols[0].metadata)
    assert sub.owned_partitions == [(T1, [0])]


def test_cooperative_gains_partitions_without_revoking():
    h = joined_and_polled(COOP, assigned=((T1, 0),), protocol="cooperative-sticky")
    h.c.request_rejoin("test")
    rejoin(h, 2, [(T1, 0), (T1, 1)], protocol="cooperative-sticky")
    assert h.callbacks() == [("assigned", (tp(T1, 1),))]
    assert not h.has(ApiKey.JOIN_GROUP)


def test_cooperative_unsubscribed_topic_is_revoked_in_join_prepare():
    h = joined_and_polled(COOP, topics=(T1, T2), assigned=((T1, 0), (T2, 0)), protocol="cooperative-sticky")
    h.c.subscribe([T1])
    h.poll()
    assert h.callbacks() == [("revoked", (tp(T2, 0),))]
    assert h.c.assignment == (tp(T1, 0),)
    assert h.has(ApiKey.JOIN_GROUP)


@pytest.mark.parametrize("config,protocol", [(EAGER, "range"), (COOP, "cooperative-sticky")])
def test_lost_partitions_after_generation_reset(config, protocol):
    # both protocols: partitions of a reset generation are lost, not revoked
    h = joined_and_polled(config, protocol=protocol)
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_MEMBER_ID))
    h.poll()
    assert h.callbacks() == [("lost", (tp(T1, 0), tp(T1, 1)))]
    rejoin(h, 5, [(T1, 0)], protocol=protocol)
    assert h.callbacks()[-1] == ("assigned", (tp(T1, 0),))


def test_in_process_listener_is_called_in_order():
    listener = Listener()
    h = joined_and_polled(COOP, assigned=((T1, 0), (T1, 1)), protocol="cooperative-sticky", listener=listener)
    h.c.request_rejoin("test")
    rejoin(h, 2, [(T1, 1)], protocol="cooperative-sticky")
    assert listener.calls == [("assigned", (tp(T1, 0), tp(T1, 1))), ("revoked", (tp(T1, 0),)), ("assigned", ())]


def test_cooperative_leader_withholds_moving_partition_for_a_second_round():
    # KIP-429 end to end from the leader's side, with the real cooperative-sticky assignor:
    # member "b" joins; "a" owned both partitions; the moving partition is assigned to nobody in round 1.
    h = Harness(config=COOP)
    h.discover()
    h.poll()
    members = [("a", subscription_bytes([T1], owned=[(T1, 0), (T1, 1)], generation=1)),
               ("b", subscription_bytes([T1]))]
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "a", "a", "cooperative-sticky", members))
    computed = h.events(out.AssignmentComputed)[0].assignments
    assert len(computed["a"]) == 1 and computed["b"] == ()


@pytest.mark.parametrize("config,protocol,revoked_count", [(EAGER, "range", 1), (COOP, "cooperative-sticky", 0)])
def test_outdated_coordinator_assignment(config, protocol, revoked_count):
    # ConsumerCoordinatorTest.testOutdatedCoordinatorAssignment: the subscription changes while the JoinGroup
    # is in flight; the stale assignment is dropped (no callback) and the member rejoins.
    h = Harness(topics=[T2], config=config)
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "c", "leader", protocol))
    h.c.subscribe([T1])
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T2, 0)], protocol_name=protocol))
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "c", "leader", protocol))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)], protocol_name=protocol))
    h.poll()
    assert h.c.assignment == (tp(T1, 0),)
    assert [c for c in h.callbacks() if c[0] == "revoked"] == [("revoked", ())] * revoked_count
    assert [c for c in h.callbacks() if c[0] == "assigned"] == [("assigned", (tp(T1, 0),))]


class Throwing(Listener):
    def __init__(self, on):
        super().__init__()
        self.on = on

    def on_partitions_revoked(self, partitions):
        super().on_partitions_revoked(partitions)
        if self.on == "revoked":
            raise RuntimeError("Illegal state on partition revoke!")

    def on_partitions_assigned(self, partitions):
        super().on_partitions_assigned(partitions)
        if self.on == "assigned":
            raise KafkaException("Kaboom on partition assign!")


def test_revoke_callback_error_is_raised_after_the_assignment_completes():
    # ConsumerCoordinatorTest.testOnRevokeExceptionShouldBeRenderedIfNotKafkaException (COOPERATIVE)
    listener = Throwing("revoked")
    h = joined_and_polled(COOP, assigned=((T1, 0), (T1, 1)), protocol="cooperative-sticky", listener=listener)
    h.c.request_rejoin("test")
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "consumer", "leader", "cooperative-sticky"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)], protocol_name="cooperative-sticky"))
    with pytest.raises(KafkaException, match="User rebalance callback throws an error") as info:
        h.poll()
    assert str(info.value.__cause__) == "Illegal state on partition revoke!"
    # both callbacks ran; the assignment was applied
    assert listener.calls[-2:] == [("revoked", (tp(T1, 1),)), ("assigned", ())]
    assert h.c.assignment == (tp(T1, 0),)


def test_assign_callback_kafka_exception_is_raised_as_is():
    listener = Throwing("assigned")
    h = Harness(config=EAGER, listener=listener)
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)]))
    with pytest.raises(KafkaException, match="Kaboom on partition assign!"):
        h.poll()
    assert h.c.assignment == (tp(T1, 0),)
