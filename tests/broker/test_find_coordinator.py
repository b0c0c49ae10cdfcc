"""FindCoordinator over TCP and the routing of group requests (KafkaApis.handleFindCoordinatorRequest; broker/apis.py
routes group keys to the coordinator service and answers transaction keys itself): the coordinator is the leader of
the group's __consumer_offsets partition, any broker answers, other brokers answer group requests with
NOT_COORDINATOR."""

from __future__ import annotations

import pytest

from broker.apis import BrokerApis
from broker.server import KGroupServer
from coordinator import GroupCoordinatorService, RequestContext
from coordinator.cluster import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.hashing import coordinator_partition
from protocol.messages import FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest
from broker_harness import TIMEOUT, connect

E = ErrorCode


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_find_coordinator_returns_leader_of_the_groups_offsets_partition(server: KGroupServer,
                                                                              version: int) -> None:
    group = f"group-v{version}"
    partition = coordinator_partition(group, 50)
    leader = server.cluster.partition(OFFSETS_TOPIC, partition).leader
    for via in range(3):  # any broker answers FindCoordinator
        c = await connect(server, via)
        try:
            if version >= 4:
                r = await c.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group, "other"]), version,
                                 timeout=TIMEOUT)
                co = r.coordinators[0]
                assert (co.key, co.error_code, co.node_id, co.host, co.port) == (
                    group, 0, leader, "127.0.0.1", server.ports[leader])
                assert r.coordinators[1].key == "other"
            else:
                r = await c.call(FindCoordinatorRequest(key=group, key_type=0), version, timeout=TIMEOUT)
                assert (r.error_code, r.node_id, r.host, r.port) == (0, leader, "127.0.0.1", server.ports[leader])
        finally:
            await c.close()


async def test_find_coordinator_transaction_key_is_unavailable(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        r = await c.call(FindCoordinatorRequest(key="txn", key_type=1), 3, timeout=TIMEOUT)
        assert (r.error_code, r.node_id) == (E.COORDINATOR_NOT_AVAILABLE, -1)
        r = await c.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]), 4, timeout=TIMEOUT)
        assert [(x.key, x.error_code) for x in r.coordinators] == [("a", E.COORDINATOR_NOT_AVAILABLE),
                                                                   ("b", E.COORDINATOR_NOT_AVAILABLE)]
    finally:
        await c.close()


async def test_group_requests_to_other_brokers_get_not_coordinator(server: KGroupServer) -> None:
    group = "elsewhere"
    coord = server.svc.coordinator_of(group)
    for b in range(3):
        if b == coord:
            continue
        c = await connect(server, b)
        try:
            r = await c.call(HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4, timeout=TIMEOUT)
            assert r.error_code == E.NOT_COORDINATOR
            r = await c.call(JoinGroupRequest(group_id=group, session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                              member_id="", protocol_type="consumer",
                                              protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")]),
                             9, timeout=TIMEOUT)
            assert r.error_code == E.NOT_COORDINATOR
        finally:
            await c.close()


def test_routing_sans_io() -> None:
    """KafkaApis.handleFindCoordinatorRequest: transaction keys are answered by the broker (no
    __transaction_state: COORDINATOR_NOT_AVAILABLE, Node.noNode), group keys by the group coordinator (the leader of
    partition abs(hashCode) % 50 of __consumer_offsets); another key type is refused by kgroup's coordinator."""
    svc = GroupCoordinatorService(num_brokers=3, seed=1)
    apis = BrokerApis(svc)

    def ask(req: FindCoordinatorRequest, version: int) -> object:
        return apis.handle(0, req, RequestContext(1, version), 0).answer

    r = ask(FindCoordinatorRequest(key="txn", key_type=1), 3)
    assert (r.error_code, r.node_id, r.host, r.port) == (E.COORDINATOR_NOT_AVAILABLE, -1, "", -1)
    r = ask(FindCoordinatorRequest(key="g", key_type=0), 3)
    leader = svc.cluster.partition(OFFSETS_TOPIC, coordinator_partition("g", 50)).leader
    assert (r.error_code, r.node_id) == (0, leader)
    r = ask(FindCoordinatorRequest(key_type=2, coordinator_keys=["s"]), 4)
    assert r.coordinators[0].error_code == E.INVALID_REQUEST

